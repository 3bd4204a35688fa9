import { test } from 'node:test';
import assert from 'node:assert/strict';
import { positional, shifted } from '../../shared/db/placeholders.ts';

// The repositories write $1, $2, ...; the ORM's execute and its value formatting take `?`.

test('numbered placeholders become positional ones, each value given where it is named', () => {
  assert.deepEqual(positional('select $1, $2', ['a', 'b']), { sql: 'select ?, ?', params: ['a', 'b'] });
  assert.deepEqual(positional('where a = $2 and b = $1 and c = $2', [1, 2]), { sql: 'where a = ? and b = ? and c = ?', params: [2, 1, 2] });
  assert.deepEqual(positional('select $10, $1', Array.from({ length: 10 }, (_, i) => i + 1)), { sql: 'select ?, ?', params: [10, 1] });
  assert.deepEqual(positional('select 1', []), { sql: 'select 1', params: [] });
});

test('a placeholder with no value is refused, not sent as null', () => {
  assert.throws(() => positional('select $2', ['a']), /\$2 has no value/);
  assert.throws(() => positional('select $0', ['a']), /\$0 has no value/);
});

test('a statement put after another moves its placeholders up by the values before it', () => {
  assert.equal(shifted('where id = $1 and at = $2', 12), 'where id = $13 and at = $14');
  assert.equal(shifted('where id = $1', 0), 'where id = $1');
});
