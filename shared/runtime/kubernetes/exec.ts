import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import { Readable, Writable } from 'node:stream';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import type { Logger } from '../../logger.ts';
import { SandboxGoneError, type ExecRequest, type ExecResult } from '../types.ts';
import { killArgv, MarkerFilter, wrapperArgv } from './exec-script.ts';
import { WORKSPACE } from './manifest.ts';
import { CONTAINER_NAME } from './names.ts';
import type { PodClient } from './pods.ts';

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
  const command = wrapperArgv({
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

    const stderrFilter = new MarkerFilter(
      token,
      (target) => {
        killTarget = target;
        if (kill) void killTree(target);
      },
      (chunk) => request.onStderr?.(chunk),
    );
    const stdout = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (!settled) request.onStdout?.(chunk);
        callback();
      },
    });
    const stderr = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (!settled) stderrFilter.push(chunk);
        callback();
      },
    });

    const finish = (outcome: { result: ExecResult } | { error: Error }) => {
      if (settled) return;
      stderrFilter.flush();
      settled = true;
      clearTimeout(timer);
      clearTimeout(giveUp);
      request.signal?.removeEventListener('abort', onAbort);
      if (socket && socket.readyState <= 1) socket.close();
      if ('result' in outcome) resolve(outcome.result);
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
        await runKill(deps, podName, target);
      } catch (err) {
        deps.log?.warn({ err, pod: podName }, 'killing a timed-out command failed; the in-pod watchdog will');
      }
    };
    const timer = setTimeout(() => requestKill(true), request.timeoutMs);
    const onAbort = () => requestKill(false);
    request.signal?.addEventListener('abort', onAbort, { once: true });

    const onStatus = (status: V1Status) => {
      if (settled) return;
      if (kill) return killed();
      const outcome = outcomeOf(status);
      if (!outcome) return failed(status.message ?? 'the exec failed');
      finish({ result: { ...outcome, timedOut: false, durationMs: elapsed(started) } });
    };

    exec
      .exec(deps.pods.namespace, podName, CONTAINER_NAME, command, stdout, stderr, stdinStream(request.stdin), false, onStatus)
      .then(
        (ws) => {
          socket = ws;
          if (settled) return ws.close();
          ws.addEventListener('close', () => {
            if (settled) return;
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
async function classifyFailure(pods: PodClient, podName: string, why: string): Promise<Error> {
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

function runKill(deps: ExecDeps, podName: string, target: string): Promise<void> {
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
      .exec(deps.pods.namespace, podName, CONTAINER_NAME, killArgv(target), null, stderr, null, false, (status) => {
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

function stdinStream(stdin: Uint8Array | undefined): Readable | null {
  if (stdin === undefined) return null;
  const chunk = Buffer.from(stdin.buffer, stdin.byteOffset, stdin.byteLength);
  // An empty stream still ends, which closes the command's stdin (v5 sends a close frame).
  return Readable.from(chunk.length ? [chunk] : []);
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}
