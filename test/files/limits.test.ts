import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { sandboxFor } from './helpers.ts';

const LIMIT = 4096;
const stack = await startSandboxStack({ overrides: { PADDOCK_FILE_MAX_BYTES: String(LIMIT) } });
const account = await newAccount(stack.url);
const box = await sandboxFor(stack, account.key);

test('a file exactly at the limit is viewed, created and edited', async () => {
  const content = 'x'.repeat(LIMIT - 1) + '\n';
  const put = await box.put('at-limit.txt', { content });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const view = await box.view('at-limit.txt');
  assert.equal(view.status, 200);
  assert.equal(view.body.size, LIMIT);
  assert.equal(view.body.content, content);
  const edit = await box.files('PATCH', '', { path: 'at-limit.txt' }, { oldText: 'x\n', newText: 'y\n' });
  assert.equal(edit.status, 200, JSON.stringify(edit.body));
});

test('past PADDOCK_FILE_MAX_BYTES, view, create and edit answer 413 file_too_large', async () => {
  await box.sh(`head -c ${LIMIT + 1} /dev/zero | tr '\\0' 'z' > /workspace/big.txt`);
  const view = await box.view('big.txt');
  assertProblem(view, 413, 'file_too_large');
  assert.equal(view.body.limitBytes, LIMIT);
  assertProblem(await box.view('big.txt', { startLine: '1', endLine: '1' }), 413, 'file_too_large');
  assertProblem(await box.files('PATCH', '', { path: 'big.txt' }, { oldText: 'z', newText: 'y', replaceAll: true }), 413, 'file_too_large');

  assertProblem(await box.put('new-big.txt', { content: 'é'.repeat(LIMIT / 2 + 1) }), 413, 'file_too_large');
  assertProblem(await box.put('new-big.bin', { contentBase64: Buffer.alloc(LIMIT + 1).toString('base64') }), 413, 'file_too_large');
  assert.equal((await box.sh('ls /workspace')).stdout.includes('new-big'), false, 'nothing was written');

  // An edit whose result would pass the limit is refused, and the file stays as it was.
  await box.put('grow.txt', { content: 'ab'.repeat(LIMIT / 4) });
  assertProblem(
    await box.files('PATCH', '', { path: 'grow.txt' }, { oldText: 'ab', newText: 'abcde', replaceAll: true }),
    413,
    'file_too_large',
  );
  assert.equal((await box.view('grow.txt')).body.content, 'ab'.repeat(LIMIT / 4));
});

test('a request body far past the limit answers 413 payload_too_large', async () => {
  const res = await box.put('huge.txt', { content: 'x'.repeat(LIMIT * 20) });
  assertProblem(res, 413, 'payload_too_large');
});
