import { constants } from 'node:os';
import type { PaddockClient } from '../api/index.ts';
import type { ExecExitEvent, ExecInput, ExecResult } from '../api/types.ts';
import { PaddockApiError } from '../api/index.ts';
import { EXIT_TIMED_OUT } from '../errors.ts';

export interface StreamSinks {
  stdout: (data: string) => Promise<void> | void;
  stderr: (data: string) => Promise<void> | void;
}

/** Runs a command, handing its output to the sinks as it comes; answers its exit. */
export async function streamExec(
  client: PaddockClient,
  sessionId: string,
  input: ExecInput,
  sinks: StreamSinks,
  signal?: AbortSignal,
): Promise<ExecExitEvent> {
  for await (const event of client.execStream(sessionId, input, { signal })) {
    if (event.type === 'stdout') await sinks.stdout(event.data);
    else if (event.type === 'stderr') await sinks.stderr(event.data);
    else if (event.type === 'error') throw new PaddockApiError({ status: 500, code: event.code, detail: event.detail });
    else return event;
  }
  throw new Error('unreachable: execStream ends with an exit or error event');
}

export function bufferedExec(client: PaddockClient, sessionId: string, input: ExecInput, signal?: AbortSignal): Promise<ExecResult> {
  return client.exec(sessionId, input, { signal });
}

/** The exit code the CLI exits with: the command's, 128+n for signal n, 124 for a timeout. */
export function exitCodeOf(exit: Pick<ExecExitEvent, 'exitCode' | 'signal' | 'timedOut'>): number {
  if (exit.timedOut) return EXIT_TIMED_OUT;
  if (exit.exitCode !== null) return exit.exitCode;
  const n = exit.signal ? (constants.signals as Record<string, number>)[exit.signal] : undefined;
  return 128 + (n ?? 9);
}

/** One argument is a shell command line (run by /bin/sh -c); several are argv, run as given. */
export function commandOf(args: string[]): string | string[] {
  return args.length === 1 ? args[0]! : args;
}
