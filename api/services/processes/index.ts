import type { Sandbox } from '../../../shared/db/entities.ts';
import { ApiError } from '../../../shared/errors.ts';
import { isId, newId } from '../../../shared/ids.ts';
import type { Pool } from 'pg';
import type { Config } from '../../../shared/config.ts';
import { prepareExec, type ExecInput, type ExecSettings } from '../exec/prepare.ts';
import { runExec, STREAM_IDLE_RELEASE_MS, type ExecOutcome, type ExecRunning, type OutputSink } from '../exec/run.ts';
import { runScript, type ScriptResult } from '../files/run.ts';
import { openedSecretsFor, type SecretOpening } from '../../../shared/secrets/opening.ts';
import type { ExecContext } from '../sandboxes.ts';
import type { MaskSet } from '../../../shared/exec/masker.ts';
import { commandShown, parseRecords, type ProcessRecord } from './records.ts';
import { EXIT, LIST, LIST_MAX, OUTPUT, RUNNER, SIGNAL, START, STDIN } from './scripts.ts';
import { inSandboxError } from '../../../shared/sandboxes/running.ts';
import { brokerBeforeStart, NO_BROKERING } from '../../../shared/secrets/brokering.ts';

// Background processes (docs/api.md, "Background processes"): each operation is one short exec of a
// fixed script (scripts.ts) in the sandbox, where the process and its kept output live. Nothing
// of them is held by an API process, so any replica serves them, before and after a restart.

/** What the background processes take: exec's running and preparing, the secrets' masks, their own settings. */
export type ProcessDeps = ExecRunning &
  ExecSettings &
  SecretOpening & {
    pg: Pool;
    config: Pick<Config, 'PADDOCK_PROCESS_MAX_PER_SANDBOX' | 'PADDOCK_PROCESS_OUTPUT_KEEP_BYTES'>;
  };

/** How long a start, a list, a signal may take in the sandbox. */
const SHORT_OP_MS = 15_000;
/** How long a write to a process's stdin may wait for the process to read it. */
const STDIN_WAIT_MS = 30_000;
/** After its sandbox's cap, a follow has nothing left to wait for. */
const FOLLOW_GRACE_MS = 10_000;

export type SignalName = 'TERM' | 'KILL';

export interface StartedProcess {
  id: string;
  command: string;
  startedAt: Date;
}

/** Starts `input` in the background: the allowlist, secrets and environment as for exec. */
export async function startProcess(deps: ProcessDeps, context: ExecContext, input: ExecInput): Promise<StartedProcess> {
  const { sandbox } = context;
  if (input.timeoutSeconds !== undefined || input.stdin !== undefined) {
    const field = input.timeoutSeconds !== undefined ? 'timeoutSeconds' : 'stdin';
    const message = field === 'stdin' ? 'not with background: write to POST …/processes/{procId}/stdin' : 'not with background: a background process runs until it ends or is stopped';
    throw new ApiError('invalid_request', `body.${field}: ${message}`, { extra: { errors: [{ location: 'body', field, message }] } });
  }
  const prepared = prepareExec(deps, context, input);
  const id = newId('proc');
  const command = commandShown(input.command);
  const { config } = deps;
  const max = config.PADDOCK_PROCESS_MAX_PER_SANDBOX;
  let started = '';
  await brokerBeforeStart(deps.runtime, sandbox.id, prepared.brokering).catch(goneAsNotRunning(sandbox.id));
  const result = await deps.runtime.exec(sandbox.id, {
    argv: ['/bin/sh', '-c', START, 'paddock-proc', id, String(config.PADDOCK_PROCESS_OUTPUT_KEEP_BYTES), String(max), String(max), Buffer.from(command).toString('base64'), RUNNER, ...prepared.argv],
    cwd: prepared.cwd,
    env: prepared.env,
    // Not the request's signal: a client that goes away once the start is asked for leaves a
    // process that either starts whole or is killed whole by the timeout, never half of one.
    timeoutMs: SHORT_OP_MS,
    onStdout: (chunk) => void (started += Buffer.from(chunk).toString('latin1')),
  }).catch(goneAsNotRunning(sandbox.id));
  if (result.exitCode === EXIT.limit) {
    throw new ApiError('process_limit_reached', `At most ${max} background processes may run in a sandbox at once; stop one first.`, { extra: { limit: max } });
  }
  if (result.exitCode === EXIT.badCwd) {
    const message = 'the working directory cannot be entered';
    throw new ApiError('invalid_request', `body.cwd: ${message}`, { extra: { errors: [{ location: 'body', field: 'cwd', message }] } });
  }
  if (result.exitCode === EXIT.busy) {
    throw new ApiError('too_many_in_flight', 'Too many background processes are starting in this sandbox at once; retry shortly.', { headers: { 'Retry-After': '1' } });
  }
  if (result.timedOut) throw new ApiError('operation_timed_out', 'The process did not start in time.');
  const nanos = /^([0-9]{1,20})\n?$/.exec(started)?.[1];
  if (result.exitCode !== 0 || !nanos) throw new Error(`starting a background process failed: exit ${String(result.exitCode)}`);
  return { id, command, startedAt: new Date(Number(BigInt(nanos) / 1_000_000n)) };
}

export async function listProcesses(deps: ProcessDeps, sandbox: Sandbox, only?: string): Promise<ProcessRecord[]> {
  const masks = masksOf(deps, sandbox);
  masks.catch(() => undefined);
  const result = await runScript(deps, sandbox.id, LIST, only ? [only] : [], { timeoutMs: SHORT_OP_MS, maxStdoutBytes: (LIST_MAX + 1) * 12 * 1024 });
  if (result.timedOut) throw new ApiError('operation_timed_out', 'Listing the processes did not finish in time.');
  return parseRecords(result.stdout.toString('latin1'), await masks);
}

/** One process; 404 for an id the sandbox does not hold (forged, mistyped, or pruned). */
export async function findProcess(deps: ProcessDeps, sandbox: Sandbox, procId: string): Promise<ProcessRecord> {
  const record = isId('proc', procId) ? (await listProcesses(deps, sandbox, procId)).find((p) => p.id === procId) : undefined;
  if (!record) throw new ApiError('process_not_found', `No background process ${procId} in sandbox ${sandbox.id}.`);
  return record;
}

/**
 * The kept output, masked and capped as exec output is, to `sink`; following, until the process
 * ends (or the sandbox's cap, a client gone or stalled, the output cap). Answers the record when
 * the process had ended and all its output was sent, else undefined.
 */
export async function streamOutput(
  deps: ProcessDeps,
  sandbox: Sandbox,
  record: ProcessRecord,
  follow: boolean,
  sink: OutputSink,
  signal: AbortSignal,
): Promise<ProcessRecord | undefined> {
  const untilCap = sandbox.expiresAt.getTime() - Date.now() + FOLLOW_GRACE_MS;
  const outcome: ExecOutcome = await runExec(
    deps,
    sandbox.id,
    {
      accountId: sandbox.accountId,
      argv: ['/bin/sh', '-c', OUTPUT, 'paddock-proc-output', record.id, String(deps.config.PADDOCK_PROCESS_OUTPUT_KEEP_BYTES), follow ? '1' : '0'],
      cwd: '/',
      env: {},
      timeoutMs: follow ? Math.max(1000, untilCap) : SHORT_OP_MS,
      masks: await masksOf(deps, sandbox),
      // Paddock's reader of the kept output, no program of the caller's.
      brokering: NO_BROKERING,
    },
    sink,
    signal,
    { idleReleaseMs: STREAM_IDLE_RELEASE_MS },
  );
  if (outcome.exitCode === EXIT.notFound) throw new ApiError('process_not_found', `No background process ${record.id}.`);
  if (outcome.exitCode !== 0) return undefined;
  return record.status === 'exited' ? record : findProcess(deps, sandbox, record.id);
}

export async function writeStdin(deps: ProcessDeps, sandbox: Sandbox, procId: string, data: string): Promise<void> {
  const result = await processScript(deps, sandbox, STDIN, procId, [], { stdin: Buffer.from(data, 'utf8'), timeoutMs: STDIN_WAIT_MS });
  if (result.exitCode === EXIT.ended) throw new ApiError('process_not_running', `Background process ${procId} has ended; its stdin is closed.`);
  if (result.timedOut) throw new ApiError('operation_timed_out', `Background process ${procId} did not read its input within ${STDIN_WAIT_MS / 1000} seconds.`);
  if (result.exitCode !== 0) throw new Error(`writing to a background process failed: exit ${String(result.exitCode)}`);
}

/** Signals the process's group (a process that ended is left as it is: stopping is idempotent). */
export async function signalProcess(deps: ProcessDeps, sandbox: Sandbox, procId: string, signal: SignalName): Promise<void> {
  const result = await processScript(deps, sandbox, SIGNAL, procId, [signal], { timeoutMs: SHORT_OP_MS });
  if (result.timedOut) throw new ApiError('operation_timed_out', `Signalling background process ${procId} did not finish in time; it is safe to send again.`);
  if (result.exitCode !== 0) throw new Error(`signalling a background process failed: exit ${String(result.exitCode)}`);
}

async function processScript(
  deps: ProcessDeps,
  sandbox: Sandbox,
  script: string,
  procId: string,
  args: string[],
  options: { stdin?: Uint8Array; timeoutMs: number },
): Promise<ScriptResult> {
  if (!isId('proc', procId)) throw new ApiError('process_not_found', `No background process ${procId} in sandbox ${sandbox.id}.`);
  const result = await runScript(deps, sandbox.id, script, [procId, ...args], { ...options, maxStdoutBytes: 64 * 1024 });
  if (result.exitCode === EXIT.notFound) throw new ApiError('process_not_found', `No background process ${procId} in sandbox ${sandbox.id}.`);
  return result;
}


async function masksOf(deps: ProcessDeps, sandbox: Sandbox): Promise<MaskSet | undefined> {
  return (await openedSecretsFor(deps, sandbox.accountId, sandbox.id)).masks;
}

function goneAsNotRunning(sandboxId: string) {
  return (err: unknown): never => {
    throw inSandboxError(err, sandboxId, 'processes');
  };
}
