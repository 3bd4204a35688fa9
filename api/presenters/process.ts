import type { StartedProcess } from '../services/processes/index.ts';
import type { ProcessRecord } from '../services/processes/records.ts';

export function presentStarted(p: StartedProcess) {
  return { id: p.id, command: p.command, startedAt: p.startedAt.toISOString() };
}

export function presentProcess(p: ProcessRecord) {
  return {
    id: p.id,
    command: p.command,
    startedAt: p.startedAt.toISOString(),
    status: p.status,
    exitCode: p.exitCode,
    signal: p.signal,
    endedAt: p.endedAt?.toISOString() ?? null,
  };
}

/** The last line of a process's output once it has ended. */
export function presentExitLine(p: ProcessRecord) {
  return { type: 'exit' as const, exitCode: p.exitCode, signal: p.signal, endedAt: p.endedAt?.toISOString() ?? null };
}
