import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';

// test-plan: once (the API's buffers and write timeouts, after the runtime has answered)

// A client that asks for a large buffered answer and never reads it: the answer is
// dropped after the write timeout, and what the request held (its in-flight lease) is freed.

const OUTPUT_MAX = 4 * 1024 * 1024;
const settings = {
  PADDOCK_EXEC_OUTPUT_MAX_BYTES: String(OUTPUT_MAX),
  PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS: '2',
  PADDOCK_INFLIGHT_EXEC_PER_SANDBOX: '1',
  PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '10000',
};
const stack = await startSandboxStack({ overrides: settings });
// The exactness tests read for many seconds through a client in this same process. On loaded CI
// runs a 2 s write timeout dropped them three times, once after the paced writer learnt to wait
// for a slow reader: when this process is starved, its client and its server stop together and
// the server sees no progress. They pin the answer's buffers, not the timeout (the tests above and
// test/exec/ndjson-body.test.ts do), so their stack waits longer.
const patient = await startSandboxStack({ overrides: { ...settings, PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS: '30' } });

test('a buffered answer read by no one is dropped after the write timeout, and frees its in-flight place', async () => {
  const account = await newAccount(stack.url, 'slowbuffered');
  const created = await createSandbox(stack.url, account.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const exec = (command: string) => call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: account.key, body: { command } });

  // Control bytes are escaped six to one in JSON: about 48 MiB of answer, far more than the
  // loopback's socket buffers hold, so the answer is still being written when the client stops.
  const flood = `head -c ${OUTPUT_MAX} /dev/zero | tr '\\0' '\\1'; head -c ${OUTPUT_MAX} /dev/zero | tr '\\0' '\\1' >&2`;
  const req = request(new URL(`/v1/sandboxes/${id}/exec`, stack.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
  });
  try {
    const answeredAt = await new Promise<number>((resolve, reject) => {
      req.on('error', () => undefined); // the server's drop surfaces as an aborted response
      req.on('response', (res) => {
        assert.equal(res.statusCode, 200);
        res.on('error', () => undefined);
        res.on('aborted', () => undefined);
        res.pause(); // a reader that never reads
        resolve(Date.now());
      });
      req.once('error', reject);
      req.end(JSON.stringify({ command: flood, timeoutSeconds: 60 }));
    });
    // While the answer is being written, its request still holds the sandbox's one place.
    assertProblem(await exec('echo busy'), 429, 'too_many_in_flight');
    // The client holds its end open and paused; only the server's drop can free the place.
    const next = await eventually('the place is free again', 15_000, async () => {
      const res = await exec('echo free');
      return res.status === 200 ? res : undefined;
    });
    const after = Date.now() - answeredAt;
    assert.ok(after >= 1500, `freed ${after} ms after the answer began, before the write timeout`);
    assert.equal(next.body.stdout, 'free\n');
  } finally {
    req.destroy();
  }
});

test('a buffered answer read slowly but steadily is not dropped', async () => {
  const account = await newAccount(stack.url, 'slowsteady');
  const created = await createSandbox(stack.url, account.key);
  const id = created.body.id as string;
  const size = 512 * 1024;
  const res = await new Promise<{ status: number; bytes: number }>((resolve, reject) => {
    const req = request(new URL(`/v1/sandboxes/${id}/exec`, stack.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
    });
    req.on('error', reject);
    req.on('response', (response) => {
      let bytes = 0;
      // Reads a chunk, then waits: far slower than the answer could go, never idle for 2 s.
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        response.pause();
        setTimeout(() => response.resume(), 300);
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, bytes }));
      response.on('error', reject);
    });
    req.end(JSON.stringify({ command: `head -c ${size} /dev/zero | tr '\\0' x` }));
  });
  assert.equal(res.status, 200);
  assert.ok(res.bytes > size, `${res.bytes} bytes read`);
});

test('a buffered answer taken slowly arrives whole and exact, each slice as it was encoded', async () => {
  // The answer's slices are encoded into buffers used again once the socket has taken them: a
  // buffer used again too soon would show here as a number out of place. Control bytes between
  // the numbers make the answer about 6 MB, more than the loopback's socket buffers take at once.
  const account = await newAccount(patient.url, 'slowexact');
  const created = await createSandbox(patient.url, account.key);
  const id = created.body.id as string;
  const count = 500_000;
  const { text } = await execReadSlowly(id, account.key, { command: `seq 1 ${count} | tr '\\n' '\\001'`, timeoutSeconds: 60 });
  const body = JSON.parse(text) as { stdout: string; stdoutTruncated?: boolean; exitCode: number };
  assert.equal(body.exitCode, 0);
  assert.ok(text.length > 5_000_000, `${text.length} characters of answer`);
  const expected = Array.from({ length: count }, (_, i) => `${i + 1}\u0001`).join('');
  assert.equal(body.stdout.length, expected.length);
  assert.ok(body.stdout === expected, 'the output arrived exactly as printed');
});

test('a streamed answer taken slowly arrives whole and exact, both streams sharing the buffers used again', async () => {
  // The streamed twin of the test above: each line is encoded into a buffer used again once the
  // socket has taken it, and stdout's lines and stderr's draw on the same buffers. A buffer used
  // again too soon would show as a number out of place on either stream.
  const account = await newAccount(patient.url, 'slowstreamexact');
  const created = await createSandbox(patient.url, account.key);
  const id = created.body.id as string;
  const count = 300_000;
  const command = `(seq 1 ${count} | tr '\\n' '\\001') & (seq 1 ${count} | tr '\\n' '\\002' >&2) & wait`;
  const { text, contentType } = await execReadSlowly(id, account.key, { command, timeoutSeconds: 60 }, 'application/x-ndjson');
  assert.equal(contentType, 'application/x-ndjson');
  const lines = text.trimEnd().split('\n').map((line) => JSON.parse(line) as { type: string; data?: string; exitCode?: number });
  const joined = (type: string) => lines.filter((line) => line.type === type).map((line) => line.data).join('');
  assert.deepEqual(lines.at(-1), { ...lines.at(-1), type: 'exit', exitCode: 0 });
  const expected = (mark: string) => Array.from({ length: count }, (_, i) => `${i + 1}${mark}`).join('');
  assert.ok(joined('stdout') === expected('\u0001'), 'stdout arrived exactly as printed');
  assert.ok(joined('stderr') === expected('\u0002'), 'stderr arrived exactly as printed');
  assert.ok(lines.length > 2 * 100, `${lines.length} lines`);
});

/** An exec whose answer is read a chunk every 15 ms: slower than it is written, never idle for long. */
function execReadSlowly(id: string, key: string, body: unknown, accept = 'application/json'): Promise<{ text: string; contentType?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(`/v1/sandboxes/${id}/exec`, patient.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept },
      // A connection of its own: one kept alive from the test before may meet the server's idle
      // close just as it is reused ("socket hang up").
      agent: false,
    });
    req.on('error', reject);
    req.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        response.pause();
        setTimeout(() => response.resume(), 15);
      });
      response.on('end', () => resolve({ text: Buffer.concat(chunks).toString('utf8'), contentType: response.headers['content-type'] }));
      response.on('error', reject);
    });
    req.end(JSON.stringify(body));
  });
}
