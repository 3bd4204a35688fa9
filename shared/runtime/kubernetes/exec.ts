import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import { Readable, Writable } from 'node:stream';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import type { Logger } from '../../logger.ts';
import { isStdinStream, OUTPUT_WINDOW_BYTES, SandboxGoneError, STDIN_WINDOW_BYTES, type ExecRequest, type ExecResult, type ExecStdin } from '../types.ts';
import { killArgv, MarkerFilter, wrapperArgv } from './exec-script.ts';
import { WORKSPACE } from './manifest.ts';
import { CONTAINER_NAME } from './names.ts';
import type { PodClient } from './pods.ts';
import { bytesMoved } from '../../reclaim.ts';

type ExecSocket = Awaited<ReturnType<Exec['exec']>>;

// How long after the timeout the in-pod watchdog kills the command should the runtime not get
// there (it crashed, or the connection broke): the pod's own backstop.
const WATCHDOG_GRACE_SECONDS = 2;
// After asking for a kill, how long to wait for the command's end before answering anyway.
const KILL_WAIT_MS = 5000;

export interface ExecDeps {
  kubeConfig: KubeConfig;
  pods: PodClient;
  log?: Logger;
}

/** Runs one command in a pod through the exec subresource (a WebSocket, v5.channel.k8s.io). */
export function execInPod(deps: ExecDeps, podName: string, request: ExecRequest): Promise<ExecResult> {
  const started = performance.now();
  const token = `paddock-${randomBytes(8).toString('hex')}`;
  const { argv: command, frame } = wrapperArgv({
    argv: request.argv,
    cwd: request.cwd ?? WORKSPACE,
    env: request.env ?? {},
    token,
    watchdogSeconds: Math.ceil(request.timeoutMs / 1000) + WATCHDOG_GRACE_SECONDS,
  });
  // Already aborted: nothing is started, and the answer is the one an abort gives.
  if (request.signal?.aborted) {
    return Promise.resolve({ exitCode: null, signal: 'SIGKILL', timedOut: false, durationMs: 0 });
  }
  const exec = new Exec(deps.kubeConfig);

  return new Promise<ExecResult>((resolve, reject) => {
    let settled = false;
    let socket: ExecSocket | undefined;
    let killTarget: string | undefined;
    let kill: { timedOut: boolean } | undefined;
    let giveUp: NodeJS.Timeout | undefined;
    let stdinFailure: Error | undefined;

    let stderrTaken: unknown;
    const stderrFilter = new MarkerFilter(
      token,
      (target) => {
        killTarget = target;
        if (kill) void killTree(target);
      },
      (chunk) => (stderrTaken = request.onStderr?.(chunk)),
    );
    // The client library writes each frame to these and never looks at what write answers: past
    // the window, the WebSocket's own socket is paused, so the kernel's buffers and TCP's window
    // hold the rest, not this process.
    const pauseSocket = () => (socket as unknown as { _socket?: { pause(): void } } | undefined)?._socket?.pause();
    const resumeSocket = () => (socket as unknown as { _socket?: { resume(): void } } | undefined)?._socket?.resume();
    const flowing = (consume: (chunk: Buffer) => unknown) => {
      const stream = new Writable({
        highWaterMark: OUTPUT_WINDOW_BYTES,
        write(chunk: Buffer, _encoding, callback) {
          bytesMoved(chunk.length);
          const taken = settled ? undefined : consume(chunk);
          if (taken instanceof Promise) taken.then(() => callback(), () => callback());
          else callback();
        },
      });
      const write = stream.write.bind(stream) as (chunk: unknown) => boolean;
      stream.write = ((chunk: unknown) => {
        const ok = write(chunk);
        if (!ok) pauseSocket();
        return ok;
      }) as typeof stream.write;
      stream.on('drain', resumeSocket);
      // Nothing may come after the status; should it, it is dropped, never an unhandled error.
      stream.on('error', () => undefined);
      return stream;
    };
    const stdout = flowing((chunk) => request.onStdout?.(chunk));
    const stderr = flowing((chunk) => {
      stderrTaken = undefined;
      stderrFilter.push(chunk);
      return stderrTaken;
    });

    const finish = (outcome: { result: ExecResult } | { error: Error }) => {
      if (settled) return;
      stderrFilter.flush();
      settled = true;
      clearTimeout(timer);
      clearTimeout(giveUp);
      request.signal?.removeEventListener('abort', onAbort);
      stdin.destroy();
      if (socket && socket.readyState <= 1) socket.close();
      if (stdinFailure) reject(stdinFailure);
      else if ('result' in outcome) resolve(outcome.result);
      else reject(outcome.error);
    };
    const killed = () =>
      finish({
        result: { exitCode: null, signal: 'SIGKILL', timedOut: kill?.timedOut ?? false, durationMs: elapsed(started) },
      });
    const failed = (why: string) => {
      void classifyFailure(deps.pods, podName, why).then((error) => finish({ error }));
    };

    const requestKill = (timedOut: boolean) => {
      if (settled || kill) return;
      kill = { timedOut };
      if (killTarget) void killTree(killTarget);
      giveUp = setTimeout(killed, KILL_WAIT_MS);
    };
    const killTree = async (target: string) => {
      try {
        await runKill(deps, podName, target, token);
      } catch (err) {
        deps.log?.warn({ err, pod: podName }, 'killing a timed-out command failed; the in-pod watchdog will');
      }
    };
    const timer = setTimeout(() => requestKill(true), request.timeoutMs);
    const onAbort = () => requestKill(false);
    request.signal?.addEventListener('abort', onAbort, { once: true });

    // The status follows the command's last output, which may still be on its way to a consumer
    // that takes it at its own pace: every byte is handed over before the answer.
    let statusSeen = false;
    const delivered = (stream: Writable) =>
      new Promise<void>((resolve) => {
        if (stream.writableFinished || stream.destroyed) return resolve();
        stream.once('finish', resolve);
        stream.once('close', resolve);
        stream.end();
      });
    const onStatus = (status: V1Status) => {
      if (settled || statusSeen) return;
      if (kill) return killed();
      const outcome = outcomeOf(status);
      if (!outcome) return failed(status.message ?? 'the exec failed');
      statusSeen = true;
      const durationMs = elapsed(started);
      void Promise.all([delivered(stdout), delivered(stderr)]).then(() => finish({ result: { ...outcome, timedOut: false, durationMs } }));
    };

    const stdin = stdinStream(frame, request.stdin, {
      socket: () => socket,
      failed: (err) => {
        // A source that failed must not reach the command as a complete input: it is stopped.
        stdinFailure ??= err;
        requestKill(false);
      },
    });
    exec
      .exec(deps.pods.namespace, podName, CONTAINER_NAME, command, stdout, stderr, stdin, false, onStatus)
      .then(
        (ws) => {
          socket = ws;
          if (settled) return ws.close();
          ws.addEventListener('close', () => {
            if (settled || statusSeen) return;
            if (kill) return killed();
            failed('the exec connection closed before the command finished');
          });
        },
        (err: unknown) => failed(`the exec connection failed: ${(err as Error)?.message ?? String(err)}`),
      );
  });
}

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

/**
 * How the command ended, from the status channel; undefined for a failure that is not the
 * command's. The exec API only carries an exit code, and the container runtime reports a death
 * by signal the way a shell does, as 128 + its number: so 129-159 read as signals, which is
 * Kubernetes' own convention (137 is SIGKILL), at the price of an explicit `exit 143` reading
 * as SIGTERM too.
 */
export function outcomeOf(status: V1Status): { exitCode: number | null; signal: string | null } | undefined {
  if (status.status === 'Success') return { exitCode: 0, signal: null };
  if (status.reason !== 'NonZeroExitCode') return undefined;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  if (!Number.isInteger(code)) return undefined;
  const signal = code > 128 && code < 160 ? SIGNAL_NAMES.get(code - 128) : undefined;
  return signal ? { exitCode: null, signal } : { exitCode: code, signal: null };
}

// A failed exec is either the sandbox being gone, which callers handle, or an infrastructure
// error worth retrying; only a fresh look at the pod tells which.
export async function classifyFailure(pods: PodClient, podName: string, why: string): Promise<Error> {
  try {
    const pod = await pods.read(podName);
    if (!pod) return new SandboxGoneError(`the sandbox does not exist (${why})`);
    if (pod.metadata?.deletionTimestamp) return new SandboxGoneError('the sandbox is being deleted');
    if (pod.status?.phase !== 'Running') {
      return new SandboxGoneError(`the sandbox is not running (pod phase ${pod.status?.phase ?? 'unknown'})`);
    }
  } catch (err) {
    return new Error(`${why}; reading the pod failed too: ${(err as Error).message}`);
  }
  return new Error(why);
}

export function runKill(deps: ExecDeps, podName: string, target: string, token: string): Promise<void> {
  const exec = new Exec(deps.kubeConfig);
  // The API requires at least one stream; stderr tells why a kill failed.
  let errors = '';
  const stderr = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      errors += chunk.toString();
      callback();
    },
  });
  return new Promise<void>((resolve, reject) => {
    let socket: ExecSocket | undefined;
    const timer = setTimeout(() => {
      socket?.close();
      reject(new Error('the kill exec did not finish'));
    }, KILL_WAIT_MS);
    exec
      .exec(deps.pods.namespace, podName, CONTAINER_NAME, killArgv(target, token), null, stderr, null, false, (status) => {
        clearTimeout(timer);
        if (status.status === 'Success') resolve();
        else reject(new Error(`kill failed: ${errors.trim() || status.message}`));
      })
      .then(
        (ws) => (socket = ws),
        (err: unknown) => {
          clearTimeout(timer);
          reject(err as Error);
        },
      );
  });
}

interface StdinHooks {
  /** The exec's WebSocket, once connected. */
  socket(): ExecSocket | undefined;
  failed(err: Error): void;
}

/**
 * The frame, then the command's own stdin; its end closes the command's stdin (v5 sends a close
 * frame). The client library sends whatever this stream emits at once, never asking whether the
 * WebSocket keeps up: so a streamed stdin is read from its source only while the socket's send
 * buffer is under the window, and TCP's flow control, up to the command's pipe in the pod, paces
 * it. A source that throws is reported, and the stream never ends (which would close stdin as if
 * the input were complete).
 */
function stdinStream(frame: Buffer, stdin: ExecStdin | undefined, hooks: StdinHooks): Readable {
  if (!isStdinStream(stdin)) {
    const chunks = [frame];
    if (stdin?.byteLength) chunks.push(Buffer.from(stdin.buffer, stdin.byteOffset, stdin.byteLength));
    return Readable.from(chunks);
  }
  const chunks = stdin[Symbol.asyncIterator]();
  let framed = false;
  return new Readable({
    highWaterMark: 0,
    read() {
      if (!framed) {
        framed = true;
        this.push(frame);
        return;
      }
      void (async () => {
        await roomToSend(hooks.socket());
        if (this.destroyed) return;
        const next = await chunks.next();
        if (this.destroyed) return;
        if (next.done) this.push(null);
        else this.push(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
      })().catch((err: unknown) => {
        if (!this.destroyed) hooks.failed(err instanceof Error ? err : new Error(String(err)));
      });
    },
    destroy(err, callback) {
      void Promise.resolve(chunks.return?.()).catch(() => undefined);
      callback(err);
    },
  });
}

/** Resolves once the WebSocket's send buffer is under the window (or the socket is gone). */
async function roomToSend(ws: ExecSocket | undefined): Promise<void> {
  while (ws && ws.readyState === 1 && ws.bufferedAmount >= STDIN_WINDOW_BYTES) {
    const raw = (ws as unknown as { _socket?: NodeJS.EventEmitter })._socket;
    // 'drain' is the socket's word that it took its buffer; the poll covers bytes the WebSocket
    // holds above the socket, which no 'drain' reports.
    await new Promise<void>((resolve) => {
      const go = () => {
        clearTimeout(poll);
        raw?.off('drain', go);
        raw?.off('close', go);
        resolve();
      };
      const poll = setTimeout(go, 50);
      raw?.on('drain', go);
      raw?.on('close', go);
    });
  }
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}
