import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InsecureBaseUrlError, MalformedCredentialError, PaddockApiError, PaddockClient, PaddockConnectionError, type ExecStreamEvent } from '../../cli/api/index.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { uniqueEmail } from '../helpers/config.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

const stack = await startSandboxStack();
const PASSWORD = 'correct horse battery staple';

/** A fetch that answers one canned response, recording the request. */
function cannedFetch(body: ConstructorParameters<typeof Response>[0], init: ResponseInit, seen: Request[] = []): typeof fetch {
  return async (input, requestInit) => {
    seen.push(new Request(input, requestInit));
    return new Response(body, init);
  };
}

test('the constructor enforces the https rule', () => {
  for (const baseUrl of ['http://paddock.example.com', 'http://127.0.0.2', 'http://[::2]', 'ftp://x.example', 'not a url', 'https://u:p@x.example']) {
    assert.throws(() => new PaddockClient({ baseUrl }), InsecureBaseUrlError, baseUrl);
  }
  assert.equal(new PaddockClient({ baseUrl: 'https://x.example/base/' }).baseUrl, 'https://x.example/base');
  assert.equal(new PaddockClient({ baseUrl: 'http://localhost:8080' }).baseUrl, 'http://localhost:8080');
  assert.equal(new PaddockClient({ baseUrl: 'http://127.0.0.1' }).baseUrl, 'http://127.0.0.1');
});

test('a credential a header cannot carry is refused in the constructor, and the refusal never quotes it', async () => {
  const secret = 'pdk_live_NeverQuoteThisPart42';
  for (const bad of [`${secret}\nx`, `${secret}\u0000`, `pdk_live_a b${secret}`, `${secret}\u00e9`]) {
    for (const field of ['apiKey', 'token'] as const) {
      assert.throws(
        () => new PaddockClient({ baseUrl: 'http://127.0.0.1', [field]: bad }),
        (err: unknown) => err instanceof MalformedCredentialError && err.credential === field && !err.message.includes('NeverQuote'),
        JSON.stringify(bad),
      );
    }
  }
  // Its ends trimmed, as fetch would: the key sent is the key alone.
  const seen: Request[] = [];
  const client = new PaddockClient({ baseUrl: 'http://127.0.0.1', apiKey: ` ${secret}\r\n`, fetch: cannedFetch('{"sandboxHours":{}}', { status: 200, headers: { 'content-type': 'application/json' } }, seen) });
  await client.account().catch(() => undefined);
  assert.equal(seen[0]?.headers.get('authorization'), `Bearer ${secret}`);
});

test("a stream ends at its signal even when fetch's abort does not reach the body (Node 20's undici), and its body is cancelled", async () => {
  // A body that goes on until cancelled, deaf to the signal: what a stream read for seconds was on
  // Node 20, whose undici can lose its abort listener (Esc in the TUI did not stop a command).
  const streams = (kind: 'exec' | 'events') => {
    let cancelled = false;
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((r) => setTimeout(r, 20));
        controller.enqueue(encoder.encode(kind === 'exec' ? '{"type":"stdout","data":"tick\\n"}\n' : 'data: {"id":"evt_1"}\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    const type = kind === 'exec' ? 'application/x-ndjson' : 'text/event-stream';
    const fetch: typeof globalThis.fetch = async () => new Response(body, { status: 200, headers: { 'content-type': type } });
    return { fetch, cancelled: () => cancelled };
  };
  for (const kind of ['exec', 'events'] as const) {
    const fake = streams(kind);
    const client = new PaddockClient({ baseUrl: 'http://127.0.0.1', apiKey: 'pdk_live_abc', fetch: fake.fetch });
    const controller = new AbortController();
    const iterator = kind === 'exec' ? client.execStream('sbx_x', { command: 'yes' }, { signal: controller.signal }) : client.streamEvents({ signal: controller.signal });
    let seen = 0;
    const ended = (async () => {
      for await (const _ of iterator as AsyncIterable<unknown>) if (++seen === 3) controller.abort();
    })();
    await assert.rejects(
      Promise.race([ended, new Promise((_, reject) => setTimeout(() => reject(new Error(`${kind}: the stream went on after its abort`)), 5_000))]),
      (err: unknown) => (err as Error).name === 'AbortError',
    );
    assert.equal(seen, 3, kind);
    assert.equal(fake.cancelled(), true, `${kind}: the body is cancelled (the connection closes)`);
  }
});

test('the whole flow against a real stack: signup, login, keys, sandbox, exec, files, allowlist, secrets', async () => {
  const anon = new PaddockClient({ baseUrl: stack.url });
  const email = uniqueEmail('sdk');
  const signed = await anon.signup({ email, password: PASSWORD });
  assert.equal(signed.account.email, email);
  const { token } = await anon.login({ email, password: PASSWORD });
  const dash = anon.withToken(token);
  const key = await dash.createApiKey({ name: 'sdk' });
  assert.match(key.key, /^pdk_live_/);
  assert.deepEqual((await dash.listApiKeys()).map((k) => k.id), [key.id]);

  const c = new PaddockClient({ baseUrl: stack.url, apiKey: key.key });
  assert.equal((await c.account()).email, email);
  const s = await c.createSandbox({ metadata: { via: 'sdk' } });
  assert.equal(s.status, 'running');
  assert.deepEqual((await c.listSandboxes()).map((x) => x.id), [s.id]);
  assert.equal((await c.getSandbox(s.id)).id, s.id);

  const r = await c.exec(s.id, { command: 'echo hi; echo no >&2; exit 2' });
  assert.deepEqual([r.exitCode, r.stdout, r.stderr], [2, 'hi\n', 'no\n']);
  const events: ExecStreamEvent[] = [];
  for await (const e of c.execStream(s.id, { command: ['sh', '-c', 'echo a; echo b >&2'], stdin: '' })) events.push(e);
  // Two pipes: their chunks may arrive in either order.
  const chunks = events.filter((e) => e.type !== 'exit');
  assert.deepEqual(chunks.filter((e) => e.type === 'stdout'), [{ type: 'stdout', data: 'a\n' }]);
  assert.deepEqual(chunks.filter((e) => e.type === 'stderr'), [{ type: 'stderr', data: 'b\n' }]);
  assert.equal(chunks.length, 2);
  assert.equal(events.at(-1)?.type, 'exit');

  assert.equal((await c.createFile(s.id, { path: 'f.txt', content: 'one\ntwo\n' })).size, 8);
  assert.equal((await c.viewFile(s.id, { path: 'f.txt', startLine: 2 })).content, 'two\n');
  assert.equal((await c.editFile(s.id, { path: 'f.txt', oldText: 'two', newText: '2' })).replacements, 1);
  assert.deepEqual((await c.listDir(s.id)).entries.map((e) => e.name), ['f.txt']);
  assert.deepEqual((await c.glob(s.id, { pattern: '*.txt' })).matches, ['/workspace/f.txt']);
  assert.deepEqual((await c.grep(s.id, { pattern: '^2$' })).matches, [{ path: '/workspace/f.txt', line: 2, text: '2' }]);

  assert.deepEqual((await c.setAllowlist(['ls'])).commands, ['ls']);
  assert.deepEqual((await c.getAllowlist()).commands, ['ls']);
  await c.clearAllowlist();
  assert.deepEqual((await c.getAllowlist()).commands, []);

  assert.equal((await c.createSecret({ name: 'TOKEN', value: 'v-long-enough' })).name, 'TOKEN');
  assert.deepEqual((await c.listSecrets()).map((x) => x.name), ['TOKEN']);
  await c.deleteSecret('TOKEN');
  assert.deepEqual(await c.listSecrets(), []);

  const gone = await c.destroySandbox(s.id);
  assert.equal(gone.state, 'destroyed');
  await dash.revokeApiKey(key.id);
  await assert.rejects(c.account(), (e: unknown) => e instanceof PaddockApiError && e.status === 401 && e.code === 'invalid_credential');
});

test('API errors carry status, code, detail and request id; the credential types are kept apart', async () => {
  const c = new PaddockClient({ baseUrl: stack.url, apiKey: 'pdk_live_wrong' });
  const err = await c.getSandbox('sbx_x').catch((e: unknown) => e);
  assert.ok(err instanceof PaddockApiError);
  assert.equal(err.status, 401);
  assert.equal(err.code, 'invalid_credential');
  assert.match(err.requestId ?? '', /^req_/);
  assert.equal(typeof err.detail, 'string');
  // No token: the client refuses before sending the API key to a token-only route.
  await assert.rejects(c.listApiKeys(), /needs a dashboard session token/);
  const login = await new PaddockClient({ baseUrl: stack.url }).login({ email: uniqueEmail(), password: 'nope-nope-nope' }).catch((e: unknown) => e);
  assert.ok(login instanceof PaddockApiError && login.code === 'invalid_login');
});

test('a 429 carries Retry-After as retryAfter', async () => {
  const problem = { type: 'urn:paddock:error:rate_limited', title: 'Too many requests', status: 429, detail: 'Slow down.', code: 'rate_limited', requestId: 'req_1' };
  const c = new PaddockClient({
    baseUrl: 'https://x.example',
    apiKey: 'k',
    fetch: cannedFetch(JSON.stringify(problem), { status: 429, headers: { 'content-type': 'application/problem+json', 'retry-after': '7' } }),
  });
  const err = await c.createSandbox().catch((e: unknown) => e);
  assert.ok(err instanceof PaddockApiError);
  assert.deepEqual([err.status, err.code, err.retryAfter, err.requestId, err.detail], [429, 'rate_limited', 7, 'req_1', 'Slow down.']);
});

test('an error that is not a problem document becomes unexpected_response; no connection becomes PaddockConnectionError', async () => {
  const c = new PaddockClient({ baseUrl: 'https://x.example', apiKey: 'k', fetch: cannedFetch('<html>bad gateway</html>', { status: 502 }) });
  const err = await c.account().catch((e: unknown) => e);
  assert.ok(err instanceof PaddockApiError);
  assert.equal(err.code, 'unexpected_response');
  assert.equal(err.status, 502);
  const down = new PaddockClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
  await assert.rejects(down.account(), PaddockConnectionError);
});

test('execStream parses NDJSON split anywhere across chunks, and fails when the stream stops before the exit', async () => {
  const lines = '{"type":"stdout","data":"héllo\\n"}\n{"type":"stderr","data":"x"}\n{"type":"exit","exitCode":0,"signal":null,"timedOut":false,"durationMs":1,"stdoutTruncated":false,"stderrTruncated":false}\n';
  const bytes = new TextEncoder().encode(lines);
  const chunked = (data: Uint8Array, size: number) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < data.length; i += size) controller.enqueue(data.slice(i, i + size));
        controller.close();
      },
    });
  const seen: Request[] = [];
  const c = new PaddockClient({ baseUrl: 'https://x.example', apiKey: 'k', fetch: cannedFetch(chunked(bytes, 3), { status: 200 }, seen) });
  const events: ExecStreamEvent[] = [];
  for await (const e of c.execStream('sbx_1', { command: 'x' })) events.push(e);
  assert.deepEqual(events.slice(0, 2), [
    { type: 'stdout', data: 'héllo\n' },
    { type: 'stderr', data: 'x' },
  ]);
  assert.equal(events[2]?.type, 'exit');
  assert.equal(seen[0]!.headers.get('accept'), 'application/x-ndjson');
  assert.equal(seen[0]!.headers.get('authorization'), 'Bearer k');

  const cut = new PaddockClient({ baseUrl: 'https://x.example', apiKey: 'k', fetch: cannedFetch(chunked(bytes.slice(0, 40), 7), { status: 200 }) });
  await assert.rejects(async () => {
    for await (const _ of cut.execStream('sbx_1', { command: 'x' })) void _;
  }, PaddockConnectionError);
});
