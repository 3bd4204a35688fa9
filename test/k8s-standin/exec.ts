import type { IncomingMessage } from 'node:http';
import { constants } from 'node:os';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket, WebSocketServer } from 'ws';
import type { ExecResult, SandboxRuntime } from '../../shared/runtime/types.ts';
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

/** GET/POST …/pods/{name}/exec upgraded to a WebSocket, every check done before the upgrade. */
export function handleExecUpgrade(ctx: ExecContext, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  try {
    if (!isAuthorized(req, ctx.token)) throw unauthorized();
    const url = new URL(req.url ?? '/', 'http://standin');
    const m = POD_EXEC.exec(url.pathname);
    if (!m || (req.method !== 'GET' && req.method !== 'POST')) {
      throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    }
    const q = url.searchParams;
    const argv = q.getAll('command');
    if (argv.length === 0) throw badRequest('you must specify at least one command for the container');
    const flag = (name: string) => q.get(name) === 'true' || q.get(name) === '1';
    const streams = { stdin: flag('stdin'), stdout: flag('stdout'), stderr: flag('stderr') };
    if (!streams.stdin && !streams.stdout && !streams.stderr) {
      throw badRequest('you must specify at least 1 of stdin, stdout, stderr');
    }
    if (flag('tty')) throw badRequest('the stand-in does not support tty');
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    const protocol = chooseSubprotocol(new Set(offered));
    if (!protocol) throw badRequest(`none of the offered subprotocols is supported (${SUBPROTOCOLS.join(', ')})`);
    const [namespace, name] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)];
    const pod = ctx.store.get(namespace, name);
    const container = q.get('container') ?? pod.spec.containers[0]!.name;
    const target = ctx.store.execTarget(namespace, name, container);
    ctx.wss.handleUpgrade(req, socket, head, (ws) => {
      if (ws.protocol !== protocol) return ws.close(1002, 'subprotocol');
      runExec(ctx.backend, ws, { ...target, argv, ...streams });
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

  // The backend takes stdin whole, so the command starts once the client has closed stdin: with
  // v5 a CLOSE frame, with v4 only the end of the connection, whose output then goes nowhere.
  const stdin: Buffer[] = [];
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    void run(backend, options, options.stdin ? Buffer.concat(stdin) : undefined, send).then((status) => {
      send(ERROR, Buffer.from(JSON.stringify(status)));
      if (ws.readyState === ws.OPEN) ws.close(1000);
    });
  };
  ws.on('message', (data: RawData, isBinary: boolean) => {
    const frame = toBuffer(data);
    if (!isBinary || frame.length === 0) return;
    const channel = frame[0];
    if (channel === STDIN && options.stdin && !started) stdin.push(frame.subarray(1));
    else if (channel === CLOSE && v5 && frame[1] === STDIN) start();
    else if (channel === RESIZE) return; // no tty, nothing to resize
  });
  // Like a real cluster, a client going away does not stop the command: only deleting the pod does.
  ws.on('close', () => {
    if (options.stdin) start();
  });
  if (!options.stdin) start();
}

async function run(
  backend: SandboxRuntime,
  options: ExecOptions,
  stdin: Buffer | undefined,
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
  // A container runtime reports a signal as 128 + its number, as a shell does.
  const signalCode = result.signal ? 128 + (constants.signals[result.signal as keyof typeof constants.signals] ?? 9) : undefined;
  const code = result.timedOut ? 137 : (result.exitCode ?? signalCode ?? 1);
  if (code === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${options.argv.join(' ')}], exit code ${code}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  };
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
