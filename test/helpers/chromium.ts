import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

// Headless Chromium (Debian's `chromium`, which scripts/test.ts installs for the suites that use
// it), driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands on its fd 3,
// answers on fd 4): no debugging port is opened on the machine, and the browser quits when the pipe
// closes, so a test process that dies leaves no browser behind. `--dump-dom` with a virtual time
// budget does not do: it dumps the page without waiting for a WebSocket's answer.

/** The largest message kept while its end has not come (a DOM's text is far smaller). */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

const FLAGS = [
  '--headless',
  '--no-sandbox', // the test may run as root, where Chromium's own sandbox refuses to start
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--no-default-browser-check',
  '--no-proxy-server', // the tests talk to loopback only, whatever proxy the environment names
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-extensions',
  '--remote-debugging-pipe',
];

interface Pending {
  resolve(result: any): void;
  reject(error: Error): void;
}

export interface Chromium {
  /** Sends a DevTools command (to the page when `page` is true) and answers its result. */
  send(method: string, params?: Record<string, unknown>, page?: boolean): Promise<any>;
  /** Evaluates `expression` in the page and answers its value. */
  evaluate(expression: string): Promise<unknown>;
  /** What Chromium wrote to stderr, its last 64 KiB (for a failure's message). */
  stderr(): string;
  /** Kills the browser and removes its profile; safe to call more than once. */
  close(): Promise<void>;
}

/** Starts Chromium with a fresh profile and one blank page attached. */
export async function startChromium(): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), 'paddock-chromium-'));
  // Its own process group, so that close() ends its renderers and helpers with it.
  const child: ChildProcess = spawn('chromium', [...FLAGS, `--user-data-dir=${profile}`, 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true });
  let errors = '';
  child.stderr!.on('data', (c: Buffer) => (errors = (errors + c.toString()).slice(-65_536)));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const commands = child.stdio[3] as Writable;
  const answers = child.stdio[4] as Readable;
  commands.on('error', () => undefined); // the browser gone: the pending commands fail below

  const pending = new Map<number, Pending>();
  let nextId = 1;
  let sessionId: string | undefined;
  const failAll = (why: string) => {
    for (const p of pending.values()) p.reject(new Error(`${why}; Chromium's stderr: ${errors}`));
    pending.clear();
  };
  let buffered = Buffer.alloc(0);
  answers.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (let end = buffered.indexOf(0); end !== -1; end = buffered.indexOf(0)) {
      const message = JSON.parse(buffered.subarray(0, end).toString()) as { id?: number; result?: unknown; error?: { message: string } };
      buffered = buffered.subarray(end + 1);
      const waiting = message.id === undefined ? undefined : pending.get(message.id);
      if (!waiting) continue; // an event: nothing here waits on one
      pending.delete(message.id!);
      if (message.error) waiting.reject(new Error(message.error.message));
      else waiting.resolve(message.result);
    }
    if (buffered.length > MAX_MESSAGE_BYTES) {
      failAll('a DevTools message too large');
      process.kill(-child.pid!, 'SIGKILL');
    }
  });
  void exited.then(() => failAll('Chromium exited'));

  const send = (method: string, params: Record<string, unknown> = {}, page = false): Promise<any> =>
    new Promise((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) return reject(new Error(`Chromium exited; its stderr: ${errors}`));
      const id = nextId++;
      pending.set(id, { resolve, reject });
      commands.write(`${JSON.stringify({ id, method, params, ...(page ? { sessionId } : {}) })}\0`);
    });

  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
        await exited;
      }
      rmSync(profile, { recursive: true, force: true });
    })());

  try {
    const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
    ({ sessionId } = await send('Target.attachToTarget', { targetId, flatten: true }));
  } catch (err) {
    await close();
    throw err;
  }
  return {
    send,
    async evaluate(expression) {
      const { result, exceptionDetails } = await send('Runtime.evaluate', { expression, returnByValue: true }, true);
      if (exceptionDetails) throw new Error(`evaluating ${expression}: ${JSON.stringify(exceptionDetails)}`);
      return result.value;
    },
    stderr: () => errors,
    close,
  };
}
