import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanup, render } from 'ink-testing-library';
import { PaddockClient } from '../../cli/api/index.ts';
import { h } from '../../cli/ui/h.ts';
import { ExecPanel } from '../../cli/ui/exec-panel.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

// Streamed exec output while secrets exist: the masker holds back only bytes that could still
// begin a secret, and releases them when the output pauses, so a reader never waits on them;
// and the end of a command, however it comes, loses nothing that was held.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });
afterEach(() => cleanup());

const SECRET = 'abcdefghij';

async function setup() {
  const a = await newAccount(stack.url);
  const s = (await createSandbox(stack.url, a.key)).body;
  const created = await call(stack.url, 'POST', '/v1/secrets', { token: a.key, body: { name: 'SPLIT', value: SECRET } });
  assert.equal(created.status, 201);
  return { a, s };
}

/** Streams an exec, noting when each piece of output arrived (ms after the request). */
async function streamed(key: string, sandboxId: string, command: string, until?: (text: string) => boolean) {
  const started = performance.now();
  const controller = new AbortController();
  const res = await fetch(`${stack.url}/v1/sandboxes/${sandboxId}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify({ command }),
    signal: controller.signal,
  });
  assert.equal(res.status, 200);
  const pieces: { at: number; type: string; data?: string }[] = [];
  let text = '';
  let rest = '';
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body!) {
      rest += decoder.decode(chunk, { stream: true });
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
        const line = JSON.parse(rest.slice(0, nl));
        rest = rest.slice(nl + 1);
        pieces.push({ at: performance.now() - started, type: line.type, data: line.data });
        if (line.type === 'stdout') text += line.data;
      }
      if (until?.(text)) {
        controller.abort();
        break;
      }
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  }
  return { pieces, text, elapsed: performance.now() - started };
}

/** When the stdout received so far first contained `wanted`. */
function arrivedAt(pieces: { at: number; type: string; data?: string }[], wanted: string): number {
  let text = '';
  for (const p of pieces) {
    if (p.type === 'stdout') text += p.data;
    if (text.includes(wanted)) return p.at;
  }
  return Infinity;
}

test('a prefix of a secret, then a pause: the text before it comes at once, the prefix itself before the pause ends', { timeout: 60_000 }, async () => {
  const { a, s } = await setup();
  const sleepS = 4;
  const { pieces, text } = await streamed(a.key, s.id, `printf 'before abc'; sleep ${sleepS}; printf 'defghij after'`);
  const exit = pieces.at(-1)!;
  assert.equal(exit.type, 'exit');
  // The command took the whole sleep; both pieces of output came well before it was over.
  assert.ok(exit.at >= sleepS * 1000, `${exit.at} ms`);
  const beforeAt = arrivedAt(pieces, 'before ');
  const prefixAt = arrivedAt(pieces, 'before abc');
  assert.ok(beforeAt < exit.at - 2000, `the text that cannot begin a secret came at ${beforeAt} ms, the exit at ${exit.at} ms`);
  assert.ok(prefixAt < exit.at - 2000, `the held prefix came at ${prefixAt} ms, the exit at ${exit.at} ms`);
  // The released prefix cannot be taken back; the rest of the secret is still masked.
  assert.equal(text, 'before abc*** after');
  assert.ok(!text.includes(SECRET));
});

test('streamed, a secret never goes out whole; a buffered exec holds until the end, so a pause reveals nothing', { timeout: 60_000 }, async () => {
  const { a, s } = await setup();
  // Written at once, it is masked whole. Written in two pieces with no pause between them, it is
  // too (the masker's tests show every chunking); here only "never whole" is certain, since a
  // loaded machine may delay the second piece past the release.
  const whole = await streamed(a.key, s.id, `printf '%s.' "$SPLIT"; printf 'xx abcde'; printf 'fghij yy'`);
  assert.match(whole.text, /^\*\*\*\.xx (?:abcde)?\*\*\* yy$/);
  // Not streamed, nothing is released early: the answer comes whole.
  const buffered = await call(stack.url, 'POST', `/v1/sandboxes/${s.id}/exec`, {
    token: a.key,
    body: { command: "printf 'xx abcde'; sleep 0.3; printf 'fghij yy'" },
  });
  assert.equal(buffered.status, 200);
  assert.equal(buffered.body.stdout, 'xx *** yy');
});

test('held bytes are not lost at the end: output that ends on a prefix, or is stopped by its timeout', { timeout: 60_000 }, async () => {
  const { a, s } = await setup();
  // Ends on a prefix of the secret: it is sent before the exit line.
  const ended = await streamed(a.key, s.id, "printf 'last words abc'");
  assert.equal(ended.text, 'last words abc');
  // A timeout stops it while it holds a prefix (on stderr too).
  const res = await fetch(`${stack.url}/v1/sandboxes/${s.id}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify({ command: "printf 'out abcd'; printf 'err ab' >&2; sleep 30", timeoutSeconds: 1 }),
  });
  const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.filter((l) => l.type === 'stdout').map((l) => l.data).join(''), 'out abcd');
  assert.equal(lines.filter((l) => l.type === 'stderr').map((l) => l.data).join(''), 'err ab');
  assert.equal(lines.at(-1).type, 'exit');
  assert.equal(lines.at(-1).timedOut, true);
});

test("the TUI's stop keeps the output that was held back: the prefix is on screen before and after esc", { timeout: 60_000 }, async () => {
  const { a, s } = await setup();
  const api = new PaddockClient({ baseUrl: stack.url, apiKey: a.key });
  const { lastFrame, stdin } = render(h(ExecPanel, { api, sessionId: s.id, onBack: () => undefined }));
  const frameWith = async (check: (f: string) => boolean, what: string, ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (!check(lastFrame() ?? '')) {
      if (Date.now() > deadline) throw new Error(`no frame with ${what}:\n${lastFrame()}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    return lastFrame() ?? '';
  };
  await frameWith((f) => f.includes('$ '), 'the prompt');
  stdin.write("printf 'partial output abc'; sleep 60");
  await new Promise((r) => setTimeout(r, 50));
  stdin.write('\r');
  // The prefix of the secret shows while the command still runs (it sleeps a minute).
  await frameWith((f) => f.includes('partial output abc') && f.includes('esc stops it'), 'the held prefix while running');
  stdin.write('\u001B');
  const f = await frameWith((x) => x.includes('stopped'), 'the stop');
  assert.match(f, /partial output abc/);
  assert.ok(!f.includes(SECRET));
});
