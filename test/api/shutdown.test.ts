import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { call } from '../helpers/http.ts';
import { uniqueEmail } from '../helpers/config.ts';

// The real `web` process: started as the Procfile starts it, stopped as an orchestrator stops it.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// Generous: a loaded machine running many test files at once starts a process slowly.
const STARTUP_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 120_000;

/** The exit of the process, or a failure if it has not exited within the time. */
async function exitOf(web: WebProcess, timeoutMs = 45_000) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running ${timeoutMs} ms after SIGTERM; logs: ${JSON.stringify(web.logs)}`)), timeoutMs);
  });
  try {
    return await Promise.race([web.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

interface WebProcess {
  child: ChildProcess;
  url: string;
  port: number;
  /** Every log line so far, parsed. */
  logs: { msg?: string; level?: number; [k: string]: unknown }[];
  /** Resolves with the first log line whose msg is `msg`. */
  waitForLog(msg: string, timeoutMs?: number): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `node api/main.ts`; the process is killed when the test ends, however it ends. */
async function startWeb(t: TestContext): Promise<WebProcess> {
  const child = spawn(process.execPath, ['api/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: process.env.DATABASE_URL,
      REDIS_URL: process.env.REDIS_URL,
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      // A port of its own choosing, read from its "listening" line: one picked here and handed over
      // could be taken by another test's process in between (EADDRINUSE seen in a CI rehearsal).
      PORT: '0',
      PADDOCK_LOG_LEVEL: 'info',
      PADDOCK_JWT_SECRET: randomBytes(32).toString('hex'),
      PADDOCK_REDIS_PREFIX: `t${randomBytes(6).toString('hex')}`,
      PADDOCK_SCRYPT_LOG_N: '12',
      // Connections still open this long after SIGTERM are cut: far beyond a healthy shutdown.
      PADDOCK_SHUTDOWN_TIMEOUT_SECONDS: '30',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const logs: WebProcess['logs'] = [];
  const waiters: { msg: string; resolve: () => void }[] = [];
  let pending = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      try {
        const entry = JSON.parse(line) as WebProcess['logs'][number];
        logs.push(entry);
        for (const w of waiters.filter((x) => x.msg === entry.msg)) w.resolve();
      } catch {
        logs.push({ msg: line });
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const waitForLog = (msg: string, timeoutMs = STARTUP_TIMEOUT_MS) =>
    new Promise<void>((resolve, reject) => {
      if (logs.some((l) => l.msg === msg)) return resolve();
      const timer = setTimeout(
        () => reject(new Error(`no "${msg}" log line within ${timeoutMs} ms; logs: ${JSON.stringify(logs)}; stderr: ${stderr}`)),
        timeoutMs,
      );
      waiters.push({
        msg,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      void exited.then(({ code }) => {
        if (!logs.some((l) => l.msg === msg)) {
          clearTimeout(timer);
          reject(new Error(`exited (${code}) before "${msg}"; stderr: ${stderr}`));
        }
      });
    });
  await waitForLog('listening');
  const url = String(logs.find((l) => l.msg === 'listening')?.url);
  return { child, url, port: Number(new URL(url).port), logs, waitForLog, exited };
}

/** Reads from the socket until `predicate` holds for everything read so far. */
function readUntil(socket: Socket, predicate: (text: string) => boolean, timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => done(new Error(`timed out; read so far: ${JSON.stringify(text)}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (predicate(text)) done();
    };
    const onEnd = () => done(predicate(text) ? undefined : new Error(`connection closed; read: ${JSON.stringify(text)}`));
    const done = (err?: Error) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', onEnd);
      if (err) reject(err);
      else resolve(text);
    };
    socket.on('data', onData);
    socket.on('end', onEnd);
  });
}

test('SIGTERM after serving a request: the web process exits 0 and logs "stopped"', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const web = await startWeb(t);
  const health = await call(web.url, 'GET', '/healthz');
  assert.equal(health.status, 200);
  const signup = await call(web.url, 'POST', '/v1/auth/signup', { body: { email: uniqueEmail('sigterm'), password: 'correct horse battery' } });
  assert.equal(signup.status, 201);
  // The fetch above keeps an idle keep-alive connection open: shutdown must not wait on it.
  const started = Date.now();
  web.child.kill('SIGTERM');
  const { code, signal } = await exitOf(web);
  assert.equal(signal, null);
  assert.equal(code, 0);
  assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms (it waited for the 30 s connection deadline)`);
  const messages = web.logs.map((l) => l.msg);
  assert.ok(messages.includes('shutting down'), JSON.stringify(messages));
  assert.ok(messages.includes('stopped'), JSON.stringify(messages));
  assert.ok(messages.indexOf('shutting down') < messages.lastIndexOf('stopped'), JSON.stringify(messages));
});

test('a request in flight when SIGTERM arrives is answered before the process exits 0', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const web = await startWeb(t);
  const email = uniqueEmail('inflight');
  const body = JSON.stringify({ email, password: 'correct horse battery' });
  const socket = connect(web.port, '127.0.0.1');
  t.after(() => socket.destroy());
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  // Headers first, with Expect: 100-continue: the "100 Continue" proves the server has the request
  // in hand, and it cannot finish until the body, sent only after the signal, arrives.
  socket.write(
    'POST /v1/auth/signup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
  );
  const interim = await readUntil(socket, (text) => text.includes('\r\n\r\n'));
  assert.match(interim, /^HTTP\/1\.1 100 Continue/);
  const response = readUntil(socket, (text) => /\r\n\r\n[\s\S]*\}$/.test(text));
  web.child.kill('SIGTERM');
  await web.waitForLog('shutting down');
  // The server no longer accepts connections, but the one in flight is still served.
  await assert.rejects(call(web.url, 'GET', '/healthz'));
  socket.write(body);
  const text = await response;
  assert.match(text, /^HTTP\/1\.1 201 /, text);
  const json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { account: { email: string } };
  assert.equal(json.account.email, email);
  const { code } = await exitOf(web);
  assert.equal(code, 0);
  const messages = web.logs.map((l) => l.msg);
  assert.ok(messages.includes('stopped'), JSON.stringify(messages));
  // The request was logged as answered 201 before the process stopped.
  const served = web.logs.find((l) => l.msg === 'request' && l.route === '/v1/auth/signup');
  assert.equal(served?.status, 201);
  assert.ok(web.logs.indexOf(served!) < web.logs.findIndex((l) => l.msg === 'stopped'));
});
