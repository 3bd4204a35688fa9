import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AllowlistBody, MAX_ALLOWLIST_ENTRIES, validateAllowlist } from '../../shared/allowlist/index.ts';

function refusal(input: unknown): string {
  const r = validateAllowlist(input);
  assert.equal(r.ok, false, `expected ${JSON.stringify(input)} to be refused`);
  assert.ok(!r.ok);
  return r.message;
}

test('valid names are kept, deduplicated and sorted', () => {
  assert.deepEqual(validateAllowlist(['ls', 'git', 'cat', 'ls', 'python3.12', 'g++', 'x86_64-linux-gnu-gcc', 'A']), {
    ok: true,
    commands: ['A', 'cat', 'g++', 'git', 'ls', 'python3.12', 'x86_64-linux-gnu-gcc'],
  });
  assert.deepEqual(validateAllowlist([]), { ok: true, commands: [] });
  assert.deepEqual(validateAllowlist(['a'.repeat(64)]), { ok: true, commands: ['a'.repeat(64)] });
  assert.deepEqual(validateAllowlist(['.hidden', '_x', '+plus']), { ok: true, commands: ['+plus', '.hidden', '_x'] });
});

test('the list must be an array of strings', () => {
  assert.match(refusal('ls'), /array/);
  assert.match(refusal(null), /array/);
  assert.match(refusal({ 0: 'ls' }), /array/);
  assert.match(refusal(['ls', 3]), /commands\[1\] must be a string, not number/);
  assert.match(refusal([null]), /commands\[0\] must be a string, not null/);
});

test('each entry is a program name: 1-64 characters, no paths, no . or .., no leading dash', () => {
  assert.match(refusal(['']), /commands\[0\] must not be empty/);
  assert.match(refusal(['ls', 'a'.repeat(65)]), /commands\[1\] must be at most 64 characters/);
  assert.match(refusal(['/bin/ls']), /not a path/);
  assert.match(refusal(['bin/ls']), /not a path/);
  assert.match(refusal(['.']), /is not a program name/);
  assert.match(refusal(['..']), /is not a program name/);
  assert.match(refusal(['-rf']), /must not start with "-"/);
  for (const bad of ['rm -rf', 'ls;rm', '$(rm)', 'l*', 'l?', '[', 'é', 'a\nb', 'a\0b', '~', 'a=b', 'a:b']) {
    assert.match(refusal([bad]), /may only contain/, JSON.stringify(bad));
  }
});

test('at most 256 entries', () => {
  const names = Array.from({ length: MAX_ALLOWLIST_ENTRIES }, (_, i) => `p${i}`);
  const ok = validateAllowlist(names);
  assert.ok(ok.ok && ok.commands.length === MAX_ALLOWLIST_ENTRIES);
  assert.match(refusal([...names, 'one-more']), /at most 256/);
  // duplicates count before they are removed: the limit bounds the request, not the result
  assert.match(refusal(Array.from({ length: MAX_ALLOWLIST_ENTRIES + 1 }, () => 'ls')), /at most 256/);
});

test('AllowlistBody: a strict {commands} object whose output is the canonical list', () => {
  assert.deepEqual(AllowlistBody.parse({ commands: ['ls', 'cat', 'ls'] }), { commands: ['cat', 'ls'] });
  assert.deepEqual(AllowlistBody.parse({ commands: [] }), { commands: [] });
  const issues = (body: unknown): Array<[string, string]> => {
    const r = AllowlistBody.safeParse(body);
    assert.equal(r.success, false, `expected ${JSON.stringify(body)} to be refused`);
    return r.error!.issues.map((i) => [i.path.join('.'), i.message]);
  };
  assert.equal(issues({ commands: ['ls'], extra: 1 })[0]![1], 'Unrecognized key: "extra"');
  assert.equal(issues({})[0]![0], 'commands');
  assert.equal(issues({ commands: 'ls' })[0]![0], 'commands');
  assert.deepEqual(issues({ commands: ['ls', 'rm -rf'] }), [
    ['commands.1', 'must be a program name: 1-64 characters of A-Z a-z 0-9 . _ + - not starting with "-" (no paths)'],
  ]);
  assert.deepEqual(issues({ commands: ['..'] }), [['commands', 'commands[0] ".." is not a program name']]);
  assert.equal(issues({ commands: Array.from({ length: 257 }, (_, i) => `p${i}`) })[0]![0], 'commands');
});

test('AllowlistBody is representable in the OpenAPI document', () => {
  const schema = z.toJSONSchema(AllowlistBody, { io: 'input', unrepresentable: 'any' }) as unknown as {
    properties: { commands: { maxItems: number; items: { pattern: string } } };
    additionalProperties: boolean;
    required: string[];
  };
  assert.equal(schema.additionalProperties, false);
  assert.deepEqual(schema.required, ['commands']);
  assert.equal(schema.properties.commands.maxItems, 256);
  const pattern = new RegExp(schema.properties.commands.items.pattern);
  assert.ok(pattern.test('ls') && !pattern.test('/bin/ls') && !pattern.test('-x') && !pattern.test('a'.repeat(65)));
});
