import type { IncomingMessage } from 'node:http';
import { constants } from 'node:os';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket, WebSocketServer } from 'ws';
import { ChunkQueue } from '../../shared/runtime/chunk-queue.ts';
import { STDIN_WINDOW_BYTES, type ExecResult, type SandboxRuntime, type TerminalSession } from '../../shared/runtime/types.ts';
import { isAuthorized, POD_EXEC } from './rest.ts';
import { badRequest, refuseUpgrade, StatusError, unauthorized } from './status.ts';
import type { PodStore } from './store.ts';

// The channel protocol of the exec subresource: every binary frame starts with its channel.
const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
const CLOSE = 255; // v5 only: "this stream is done", the payload byte names the stream
export const SUBPROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'] as const;

export interface ExecContext {
  store: PodStore;
  backend: SandboxRuntime;
  token: string;
  wss: WebSocketServer;
}

interface ExecOptions {
  backendId: string;
  deadlineMs: number;
  argv: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

/**
 * The last exec request URLs the stand-in received, as an API server's audit log records them:
 * the tests check that nothing secret travels in them.
 */
export const recordedExecUrls: string[] = [];
const RECORDED_MAX = 1000;

function recordExecUrl(url: string): void {
  recordedExecUrls.push(url);
  if (recordedExecUrls.length > RECORDED_MAX) recordedExecUrls.splice(0, recordedExecUrls.length - RECORDED_MAX);
}

/** GET/POST …/pods/{name}/exec upgraded to a WebSocket, every check done before the upgrade. */
export function handleExecUpgrade(ctx: ExecContext, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  try {
    if (!isAuthorized(req, ctx.token)) throw unauthorized();
    const url = new URL(req.url ?? '/', 'http://standin');
    const m = POD_EXEC.exec(url.pathname);
    if (!m || (req.method !== 'GET' && req.method !== 'POST')) {
      throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    }
    recordExecUrl(req.url ?? '');
    const q = url.searchParams;
    const argv = q.getAll('command');
    if (argv.length === 0) throw badRequest('you must specify at least one command for the container');
    const flag = (name: string) => q.get(name) === 'true' || q.get(name) === '1';
    const streams = { stdin: flag('stdin'), stdout: flag('stdout'), stderr: flag('stderr') };
    if (!streams.stdin && !streams.stdout && !streams.stderr) {
      throw badRequest('you must specify at least 1 of stdin, stdout, stderr');
    }
    // As the kubelet does: a terminal has one output stream, and stderr is not separate.
    const tty = flag('tty');
    if (tty) streams.stderr = false;
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    const protocol = chooseSubprotocol(new Set(offered));
    if (!protocol) throw badRequest(`none of the offered subprotocols is supported (${SUBPROTOCOLS.join(', ')})`);
    const [namespace, name] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)];
    const pod = ctx.store.get(namespace, name);
    const container = q.get('container') ?? pod.spec.containers[0]!.name;
    const target = ctx.store.execTarget(namespace, name, container);
    ctx.wss.handleUpgrade(req, socket, head, (ws) => {
      if (ws.protocol !== protocol) return ws.close(1002, 'subprotocol');
      if (tty) runTerminal(ctx.backend, ws, { ...target, argv, ...streams });
      else runExec(ctx.backend, ws, { ...target, argv, ...streams });
    });
  } catch (err) {
    refuseUpgrade(socket, err instanceof StatusError ? err : new StatusError(500, 'InternalError', String(err)));
  }
}

/** As the API server does: the first protocol, in the client's order, that the server speaks. */
export function chooseSubprotocol(protocols: Set<string>): string | false {
  for (const p of protocols) if ((SUBPROTOCOLS as readonly string[]).includes(p)) return p;
  return false;
}

function runExec(backend: SandboxRuntime, ws: WebSocket, options: ExecOptions): void {
  const v5 = ws.protocol === 'v5.channel.k8s.io';
  const send = (channel: number, data: Uint8Array) => {
    if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.of(channel), data]));
  };
  // As the kubelet does: one empty frame on the lowest output channel says the streams are up.
  send(options.stdout ? STDOUT : options.stderr ? STDERR : ERROR, Buffer.alloc(0));

  // As the kubelet does, the command starts at once and stdin is copied to it as it comes; past
  // the window the connection is not read, so TCP holds the client back. Its end is the client's
  // CLOSE frame for stdin (v5), or the end of the connection.
  const raw = (ws as unknown as { _socket?: { pause(): void; resume(): void } })._socket;
  const stdin = options.stdin
    ? new ChunkQueue(() => {
        if (stdin!.queued < STDIN_WINDOW_BYTES) raw?.resume();
      })
    : undefined;
  void run(backend, options, stdin, send).then((status) => {
    send(ERROR, Buffer.from(JSON.stringify(status)));
    if (ws.readyState === ws.OPEN) ws.close(1000);
  });
  ws.on('message', (data: RawData, isBinary: boolean) => {
    const frame = toBuffer(data);
    if (!isBinary || frame.length === 0) return;
    const channel = frame[0];
    if (channel === STDIN && stdin) {
      stdin.push(frame.subarray(1));
      if (stdin.queued >= STDIN_WINDOW_BYTES) raw?.pause();
    } else if (channel === CLOSE && v5 && frame[1] === STDIN) stdin?.end();
    else if (channel === RESIZE) return; // no tty, nothing to resize
  });
  // Like a real cluster, a client going away does not stop the command: only deleting the pod does.
  ws.on('close', () => stdin?.end());
}

// Output sent and not yet on the wire, past which the terminal's output is not read.
const TTY_WINDOW_BYTES = 64 * 1024;

/**
 * tty=true: the command on a pseudo-terminal of the backend's (the local runtime's terminal),
 * stdin to it as it comes, the resize channel's {"Width","Height"} (read case-insensitively, as
 * Go's JSON decoding does) to its size. The connection's end hangs the terminal up: here that
 * ends the command outright, where a process that ignores SIGHUP would outlive it in a cluster.
 */
function runTerminal(backend: SandboxRuntime, ws: WebSocket, options: ExecOptions): void {
  const send = (channel: number, data: Uint8Array, done?: () => void) => {
    if (ws.readyState !== ws.OPEN) return done?.();
    ws.send(Buffer.concat([Buffer.of(channel), data]), () => done?.());
  };
  send(STDOUT, Buffer.alloc(0));
  const hangUp = new AbortController();
  let session: TerminalSession | undefined;
  const early: Buffer[] = [];
  let size = { cols: 80, rows: 24 };
  let start: () => void = () => undefined;
  const resize = (payload: Buffer) => {
    let fields: Record<string, unknown>;
    try {
      fields = Object.fromEntries(Object.entries(JSON.parse(payload.toString('utf8')) as object).map(([k, v]) => [k.toLowerCase(), v]));
    } catch {
      return;
    }
    const cols = Number(fields.width);
    const rows = Number(fields.height);
    if (!Number.isInteger(cols) || !Number.isInteger(rows) || cols < 0 || rows < 0 || cols > 65535 || rows > 65535) return;
    size = { cols, rows };
    if (session) inOrder(() => session?.resize(cols, rows));
    start();
  };
  const socket = (ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  let writing: Promise<void> = Promise.resolve();
  let pending = 0;
  // One write or resize at a time, in the order they came, as a kubelet's resize (an ioctl) is
  // set before the keystrokes that follow it reach the terminal: the connection is not read until
  // every frame read is done, so input waits in TCP.
  const inOrder = (step: () => Promise<void> | undefined) => {
    pending++;
    socket.pause();
    writing = writing
      .then(step)
      .then(() => {
        if (--pending === 0) socket.resume();
      });
  };
  ws.on('message', (data: RawData, isBinary: boolean) => {
    const frame = toBuffer(data);
    if (!isBinary || frame.length === 0) return;
    const payload = frame.subarray(1);
    if (frame[0] === RESIZE) return resize(payload);
    if (frame[0] !== STDIN || !options.stdin) return;
    if (!session) return void early.push(payload);
    inOrder(() => session?.write(payload));
  });
  ws.on('close', () => hangUp.abort());
  // Clients send the terminal's size first thing: the command starts at it (or, without one, at
  // 80x24 after a second). A size that changes while it starts is applied once it has.
  let started = false;
  start = () => {
    if (started || hangUp.signal.aborted) return;
    started = true;
    clearTimeout(fallback);
    const initial = size;
    void backend
      .terminal(options.backendId, {
        argv: options.argv,
        cols: size.cols,
        rows: size.rows,
        signal: hangUp.signal,
        onOutput: (chunk) => {
          if (ws.readyState !== ws.OPEN) return;
          if (ws.bufferedAmount < TTY_WINDOW_BYTES) return send(STDOUT, chunk);
          return new Promise<void>((resolve) => send(STDOUT, chunk, resolve));
        },
      })
      .then(async (opened) => {
        inOrder(async () => {
          if (size !== initial) await opened.resize(size.cols, size.rows);
          for (const payload of early.splice(0)) await opened.write(payload);
        });
        session = opened;
        const result = await opened.exit;
        return statusOf(result, options.argv);
      })
      .catch((err: unknown) => ({ metadata: {}, status: 'Failure', message: (err as Error)?.message ?? String(err), reason: 'InternalError', code: 500 }))
      .then((status) => {
        send(ERROR, Buffer.from(JSON.stringify(status)));
        if (ws.readyState === ws.OPEN) ws.close(1000);
      });
  };
  const fallback = setTimeout(() => start(), 1000);
}

function statusOf(result: { exitCode: number | null; signal: string | null; timedOut?: boolean }, argv: string[]): object {
  // A container runtime reports a signal as 128 + its number, as a shell does.
  const signalCode = result.signal ? 128 + (constants.signals[result.signal as keyof typeof constants.signals] ?? 9) : undefined;
  const code = result.timedOut ? 137 : (result.exitCode ?? signalCode ?? 1);
  if (code === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${argv.join(' ')}], exit code ${code}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  };
}

async function run(
  backend: SandboxRuntime,
  options: ExecOptions,
  stdin: AsyncIterable<Uint8Array> | undefined,
  send: (channel: number, data: Uint8Array) => void,
): Promise<object> {
  let result: ExecResult;
  try {
    result = await backend.exec(options.backendId, {
      argv: options.argv,
      ...(stdin ? { stdin } : {}),
      // The API has no exec timeout; the pod's deadline is the only bound.
      timeoutMs: options.deadlineMs,
      ...(options.stdout ? { onStdout: (chunk: Uint8Array) => send(STDOUT, chunk) } : {}),
      ...(options.stderr ? { onStderr: (chunk: Uint8Array) => send(STDERR, chunk) } : {}),
    });
  } catch (err) {
    return { metadata: {}, status: 'Failure', message: (err as Error)?.message ?? String(err), reason: 'InternalError', code: 500 };
  }
  return statusOf(result, options.argv);
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
