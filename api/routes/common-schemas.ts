import { z } from 'zod';

export const timestamp = z.iso.datetime().meta({ description: 'RFC 3339 UTC timestamp' });

/** A query flag: exactly `true` or `false`. */
export const booleanFlag = z.enum(['true', 'false']).transform((v) => v === 'true');

export const email = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email({ error: 'must be an email address' }))
  // Emails are compared case-insensitively and in one Unicode form, so one person is one account.
  .transform((v) => v.normalize('NFC').toLowerCase());

export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item) });
}
