import { z } from 'zod';
import { booleanFlag, listOf, timestamp } from '../common-schemas.ts';

export const ProcessParams = z.strictObject({
  id: z.string().max(100),
  procId: z.string().max(100).meta({ description: 'proc_…, as the start answered it' }),
});
export const SandboxParams = z.strictObject({ id: z.string().max(100) });

export const StartedProcess = z.object({
  id: z.string().meta({ description: 'proc_…' }),
  command: z.string().meta({ description: 'The command as lists show it: a string as given, an argv shell-quoted; at most 1024 characters' }),
  startedAt: timestamp,
});

export const ProcessObject = z.object({
  id: z.string(),
  command: z.string(),
  startedAt: timestamp,
  status: z.enum(['running', 'exited']),
  exitCode: z.int().nullable().meta({ description: 'null while it runs, when a signal ended it, or when its end was never recorded' }),
  signal: z.string().nullable().meta({ description: 'SIGTERM, SIGKILL… when a signal ended it' }),
  endedAt: timestamp.nullable(),
});
export const ProcessList = listOf(ProcessObject);

export const OutputQuery = z.strictObject({
  follow: booleanFlag
    .default(false)
    .meta({ description: 'Keep the answer open, sending output as it comes, until the process ends' }),
});

export const ProcessOutputLine = z.union([
  z.object({ type: z.enum(['stdout', 'stderr']), data: z.string() }),
  z.object({ type: z.literal('exit'), exitCode: z.int().nullable(), signal: z.string().nullable(), endedAt: timestamp.nullable() }),
  z.object({ type: z.literal('error'), code: z.string(), detail: z.string() }),
]);

export const StdinBody = z.strictObject({
  data: z.string().meta({ description: "Written to the process's standard input (UTF-8), which stays open for the next write" }),
});

export const SignalQuery = z.strictObject({
  signal: z.enum(['TERM', 'KILL']).default('TERM').meta({ description: "Sent to the process's process group" }),
});
