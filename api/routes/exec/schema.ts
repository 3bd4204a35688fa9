import { z } from 'zod';
import { ENV_NAME, isReservedKey } from '../../../shared/exec/env-names.ts';

export const ExecBody = z.strictObject({
  command: z
    .union([
      z.string().min(1).max(65_536).meta({ description: 'Run by /bin/sh -c' }),
      z.array(z.string().max(65_536)).min(1).max(4096).meta({ description: 'argv, run as given' }),
    ])
    .refine((c) => (typeof c === 'string' ? !c.includes('\u0000') : c.every((a) => !a.includes('\u0000')) && c[0] !== ''), {
      error: 'must not contain NUL bytes, and the program must not be empty',
    }),
  cwd: z
    .string()
    .min(1)
    .max(4096)
    .refine((v) => !v.includes('\u0000'), { error: 'must not contain NUL bytes' })
    .optional()
    .meta({ description: 'Working directory; default /workspace' }),
  env: z
    .record(
      z.string().max(128).regex(ENV_NAME, { error: 'env names must be environment variable names' }),
      z
        .string()
        .max(65_536)
        .refine((v) => !v.includes('\u0000'), { error: 'env values must not contain NUL bytes' }),
    )
    .refine((m) => Object.keys(m).length <= 256, { error: 'at most 256 env entries' })
    .refine((m) => !Object.keys(m).some(isReservedKey), { error: 'env names must not be __proto__ or start with __PADDOCK_ (reserved)' })
    .optional(),
  stdin: z.string().optional().meta({ description: 'Sent to the command as standard input (UTF-8), then closed' }),
  timeoutSeconds: z.number().positive().optional().meta({ description: 'Default 60; the operator sets the maximum' }),
  background: z
    .boolean()
    .optional()
    .meta({ description: 'Start it as a background process and answer 202 at once (not with stdin or timeoutSeconds); see /processes' }),
});

export const ExecParams = z.strictObject({ id: z.string().max(100) });

export const ExecResult = z.object({
  exitCode: z.int().nullable().meta({ description: 'null when a signal ended the command' }),
  signal: z.string().nullable().meta({ description: 'SIGKILL, SIGTERM… when a signal ended it' }),
  stdout: z.string(),
  stderr: z.string(),
  stdoutTruncated: z.boolean(),
  stderrTruncated: z.boolean(),
  durationMs: z.int(),
  timedOut: z.boolean(),
});

export const ExecStreamLine = z.union([
  z.object({ type: z.enum(['stdout', 'stderr']), data: z.string() }),
  z.object({
    type: z.literal('exit'),
    exitCode: z.int().nullable(),
    signal: z.string().nullable(),
    timedOut: z.boolean(),
    durationMs: z.int(),
    stdoutTruncated: z.boolean(),
    stderrTruncated: z.boolean(),
  }),
  z.object({ type: z.literal('error'), code: z.string(), detail: z.string() }),
]);
