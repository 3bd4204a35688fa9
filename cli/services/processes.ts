import type { PaddockClient } from '../api/index.ts';
import { PaddockApiError } from '../api/index.ts';
import type { ExecInput, ProcessExitEvent, ProcessInfo, ProcessSignal, StartedProcess } from '../api/types.ts';
import type { StreamSinks } from './exec.ts';

export function startProcess(client: PaddockClient, sessionId: string, input: Omit<ExecInput, 'stdin' | 'timeoutSeconds'>): Promise<StartedProcess> {
  return client.startProcess(sessionId, input);
}

export function listProcesses(client: PaddockClient, sessionId: string): Promise<ProcessInfo[]> {
  return client.listProcesses(sessionId);
}

/** Hands a process's output to the sinks; answers its exit when it has ended (undefined while it runs). */
export async function processLogs(
  client: PaddockClient,
  sessionId: string,
  procId: string,
  sinks: StreamSinks,
  options: { follow: boolean; signal?: AbortSignal },
): Promise<ProcessExitEvent | undefined> {
  for await (const event of client.processOutput(sessionId, procId, { follow: options.follow, signal: options.signal })) {
    if (event.type === 'stdout') await sinks.stdout(event.data);
    else if (event.type === 'stderr') await sinks.stderr(event.data);
    else if (event.type === 'error') throw new PaddockApiError({ status: 500, code: event.code, detail: event.detail });
    else return event;
  }
  return undefined;
}

export function stopProcess(client: PaddockClient, sessionId: string, procId: string, signal: ProcessSignal): Promise<void> {
  return client.stopProcess(sessionId, procId, signal);
}
