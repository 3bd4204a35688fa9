import { randomBytes } from 'node:crypto';
import querystring from 'node:querystring';
import type { V1Status } from '@kubernetes/client-node';
import type WebSocket from 'ws';
import { SandboxGoneError, type TerminalRequest, type TerminalSession } from '../types.ts';
import { openChannelSocket } from './channel-socket.ts';
import { outcomeOf, runKill, type ExecDeps } from './exec.ts';
import { terminalWrapperArgv } from './exec-script.ts';
import { WORKSPACE } from './manifest.ts';
import { CONTAINER_NAME } from './names.ts';
import { bytesMoved } from '../../reclaim.ts';

type Socket = WebSocket;

const STDIN = 0;
const STDOUT = 1;
const STATUS = 3;
const RESIZE = 4;
// The wrapper's first line; anything longer is not it.
const MARKER_MAX_BYTES = 128;
// Keystrokes sent and not yet on the wire: past it, the caller's write waits.
const INPUT_WINDOW_BYTES = 64 * 1024;

/**
 * A terminal in a pod: the exec subresource with tty (stdout carries the terminal's output,
 * there is no stderr), stdin, and the resize channel. The connection is ours alone: the
 * client library's Exec would buffer stdin without bound and size the terminal from process.stdout.
 */
export async function terminalInPod(deps: ExecDeps, podName: string, request: TerminalRequest): Promise<TerminalSession> {
  const token = `paddock-${randomBytes(8).toString('hex')}`;
  const { argv, frame } = terminalWrapperArgv({ argv: request.argv, cwd: WORKSPACE, env: request.env ?? {}, token });
  const query = querystring.stringify({ stdout: true, stderr: false, stdin: true, tty: true, command: argv, container: CONTAINER_NAME });
  const path = `/api/v1/namespaces/${deps.pods.namespace}/pods/${podName}/exec?${query}`;

  let pid: string | undefined;
  let head: Buffer | undefined = Buffer.alloc(0);
  let settle!: { resolve(v: { exitCode: number | null; signal: string | null }): void; reject(e: Error): void };
  const exit = new Promise<{ exitCode: number | null; signal: string | null }>((resolve, reject) => (settle = { resolve, reject }));
  exit.catch(() => undefined);
  let ended = false;
  let socket: Socket | undefined;
  // Keystrokes typed before the wrapper's second line, each with its writer's callback: a write
  // settles only once they go out, so the caller reads no more meanwhile and this holds one read.
  const held: { data: Buffer; done(): void }[] = [];
  const pause = () => (socket as unknown as { _socket?: { pause(): void } } | undefined)?._socket?.pause();
  const resume = () => (socket as unknown as { _socket?: { resume(): void } } | undefined)?._socket?.resume();

  let waiting = 0;
  const output = (chunk: Buffer) => {
    const taken = request.onOutput(chunk);
    if (!(taken instanceof Promise)) return;
    // The handler cannot wait: the socket stops being read, so TCP holds the rest. Frames already
    // read come on meanwhile, each with its own wait: reading resumes when the last is over.
    if (waiting++ === 0) pause();
    const done = () => void (--waiting === 0 && resume());
    void taken.then(done, done);
  };
  /**
   * Until the wrapper's two lines: at the first the frame goes out, at the second what was typed
   * meanwhile (exec-script.ts, terminalWrapperArgv). Any other line is the command's output (a
   * wrapper that failed): it is shown, and nothing more is held.
   */
  const beforeMarker = (chunk: Buffer): void => {
    const buf = Buffer.concat([head!, chunk]);
    const newline = buf.indexOf(10);
    if (newline === -1 && buf.length < MARKER_MAX_BYTES) return void (head = buf);
    const line = newline === -1 ? '' : buf.subarray(0, newline).toString('latin1');
    const rest = buf.subarray(newline + 1);
    const started = pid === undefined ? new RegExp(`^${token} p([0-9]+)\\r?$`).exec(line) : null;
    if (started) {
      pid = started[1];
      send(STDIN, frame);
      head = Buffer.alloc(0);
      return rest.length > 0 ? beforeMarker(rest) : undefined;
    }
    head = undefined;
    const ready = pid !== undefined && new RegExp(`^${token} r\\r?$`).test(line);
    for (const { data, done } of held.splice(0)) send(STDIN, data, done);
    if (!ready) return output(buf);
    if (rest.length > 0) output(rest);
  };
  const send = (channel: number, data: Uint8Array, done?: () => void) => {
    if (!socket || socket.readyState !== socket.OPEN) return done?.();
    socket.send(Buffer.concat([Buffer.of(channel), data]), () => done?.());
  };
  const finish = (outcome: { result: { exitCode: number | null; signal: string | null } } | { error: Error }) => {
    if (ended) return;
    ended = true;
    request.signal?.removeEventListener('abort', onAbort);
    for (const { done } of held.splice(0)) done();
    if (socket && socket.readyState <= 1) socket.close();
    if ('result' in outcome) settle.resolve(outcome.result);
    else settle.reject(outcome.error);
  };
  const onStatus = (status: V1Status) => {
    const outcome = outcomeOf(status);
    if (outcome) return finish({ result: outcome });
    void gone(deps, podName, status.message ?? 'the terminal failed').then((error) => finish({ error }));
  };
  // Closing a terminal's connection hangs its terminal up, which a process may ignore: whatever
  // carries the token is killed, as exec's kill does, before the connection goes.
  const onAbort = () => {
    if (ended) return;
    const kill = pid ? runKill(deps, podName, `-${pid}`, token).catch(() => undefined) : Promise.resolve();
    void kill.then(() => finish({ result: { exitCode: null, signal: 'SIGKILL' } }));
  };

  socket = await openChannelSocket(deps.kubeConfig, path, { protocols: ['v5.channel.k8s.io', 'v4.channel.k8s.io'], purpose: 'terminal' });
  socket.on('message', (raw: WebSocket.RawData, isBinary: boolean) => {
    const frame = Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw as Buffer);
    bytesMoved(frame.length);
    if (ended || !isBinary || frame.length === 0) return;
    const data = frame.subarray(1);
    if (frame[0] === STATUS) onStatus(JSON.parse(data.toString('utf8')) as V1Status);
    else if (frame[0] === STDOUT && data.length > 0) {
      if (head) beforeMarker(data);
      else output(data);
    }
  });
  socket.on('close', () => {
    if (!ended) void gone(deps, podName, 'the terminal connection closed before its command ended').then((error) => finish({ error }));
  });
  socket.resume();
  void resize(request.cols, request.rows);
  request.signal?.addEventListener('abort', onAbort, { once: true });
  if (request.signal?.aborted) onAbort();

  // The kubelet keeps a size sent before the command has started and sets it once it has.
  function resize(cols: number, rows: number): Promise<void> {
    return new Promise<void>((resolve) => send(RESIZE, Buffer.from(JSON.stringify({ Width: Math.trunc(cols), Height: Math.trunc(rows) })), resolve));
  }
  return {
    exit,
    resize,
    write(data) {
      if (ended) return Promise.resolve();
      if (head) return new Promise<void>((done) => held.push({ data: Buffer.from(data), done }));
      return new Promise<void>((resolve) => {
        send(STDIN, data, resolve);
        // ws calls back once written to the socket; past the window, wait for that.
        if ((socket?.bufferedAmount ?? 0) < INPUT_WINDOW_BYTES) resolve();
      });
    },
  };
}

async function gone(deps: ExecDeps, podName: string, why: string): Promise<Error> {
  try {
    const pod = await deps.pods.read(podName);
    if (!pod || pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Running') return new SandboxGoneError(`the sandbox ended (${why})`);
  } catch {
    // Unknown: the failure as it is.
  }
  return new Error(why);
}
