/**
 * Validation of an account's command allowlist (PUT /v1/allowlist).
 *
 * Each entry is a program name as the checker compares it (a basename): 1–64 characters of
 * `A–Z a–z 0–9 . _ + -`, not starting with `-` (a wrapper would read it as an option), and not
 * `.` or `..`. At most 256 entries. Duplicates are removed and the result is sorted, so the
 * stored list is canonical.
 */
import { z } from 'zod';

export const MAX_ALLOWLIST_ENTRIES = 256;
export const MAX_PROGRAM_NAME_LENGTH = 64;
const PROGRAM_NAME = /^[A-Za-z0-9._+][A-Za-z0-9._+-]{0,63}$/;

export type AllowlistValidation = { ok: true; commands: string[] } | { ok: false; message: string };

function describe(value: unknown): string {
  if (typeof value !== 'string') return value === null ? 'null' : typeof value;
  const shown = JSON.stringify(value.length > 70 ? `${value.slice(0, 70)}…` : value);
  return shown;
}

/** Why `name` is not a valid program name, or null when it is. */
export function programNameProblem(name: unknown): string | null {
  if (typeof name !== 'string') return `must be a string, not ${describe(name)}`;
  if (name.length === 0) return 'must not be empty';
  if (name.length > MAX_PROGRAM_NAME_LENGTH) return `must be at most ${MAX_PROGRAM_NAME_LENGTH} characters long`;
  if (name.includes('/')) return `${describe(name)} must be a program name, not a path (programs are compared by name)`;
  if (name === '.' || name === '..') return `${describe(name)} is not a program name`;
  if (name.startsWith('-')) return `${describe(name)} must not start with "-"`;
  if (!PROGRAM_NAME.test(name)) return `${describe(name)} may only contain the characters A-Z a-z 0-9 . _ + -`;
  return null;
}

export function validateAllowlist(commands: unknown): AllowlistValidation {
  if (!Array.isArray(commands)) return { ok: false, message: 'commands must be an array of program names' };
  if (commands.length > MAX_ALLOWLIST_ENTRIES) {
    return { ok: false, message: `commands may hold at most ${MAX_ALLOWLIST_ENTRIES} program names` };
  }
  const out = new Set<string>();
  for (const [i, name] of (commands as unknown[]).entries()) {
    const problem = programNameProblem(name);
    if (problem !== null) return { ok: false, message: `commands[${i}] ${problem}` };
    out.add(name as string);
  }
  return { ok: true, commands: [...out].sort() };
}

/**
 * The PUT /v1/allowlist body: `{ commands: [...] }`, a strict object. Its output is the
 * canonical list (deduplicated, sorted). An empty list clears the allowlist.
 */
export const AllowlistBody = z.strictObject({
  commands: z
    .array(
      z.string().regex(PROGRAM_NAME, {
        error: 'must be a program name: 1-64 characters of A-Z a-z 0-9 . _ + - not starting with "-" (no paths)',
      }),
    )
    .max(MAX_ALLOWLIST_ENTRIES)
    .meta({ description: 'Program names (compared by basename); duplicates are removed and the list is sorted.' })
    .transform((value, ctx) => {
      const result = validateAllowlist(value);
      if (!result.ok) {
        ctx.addIssue({ code: 'custom', message: result.message });
        return z.NEVER;
      }
      return result.commands;
    }),
});

export type AllowlistBody = z.output<typeof AllowlistBody>;
