import { z } from 'zod';
import { timestamp } from '../common-schemas.ts';

const size = (what: string, fallback: number) =>
  z
    .string()
    .regex(/^[1-9][0-9]{0,3}$/, { error: `must be a number of ${what}, 1-1000` })
    .transform(Number)
    .refine((n) => n <= 1000, { error: `at most 1000 ${what}` })
    .optional()
    .meta({ description: `The terminal's ${what} at the start; default ${fallback}` });

const word = z.string().min(1).max(4096).refine((v) => !v.includes('\u0000'), { error: 'must not contain NUL bytes' });

export const TerminalParams = z.strictObject({ id: z.string().max(100) });

export const TerminalQuery = z.strictObject({
  cols: size('columns', 80),
  rows: size('rows', 24),
  command: z
    .union([word.transform((w) => [w]), z.array(word).min(1).max(256)])
    .optional()
    .meta({
      description:
        'The program and its arguments, one per repeated parameter (command=vim&command=notes.txt), run as given, not by a shell; default the login shell (bash -l, else sh -l)',
    }),
  ticket: z.string().max(100).optional().meta({ description: 'A ticket from POST …/terminal/tickets, instead of the Authorization header (single use)' }),
});

export const TicketParams = TerminalParams;

export const Ticket = z.object({
  ticket: z.string().meta({ description: 'Single use, for this sandbox only; never logged' }),
  expiresAt: timestamp,
});
