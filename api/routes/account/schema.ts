import { z } from 'zod';
import { timestamp } from '../common-schemas.ts';

export const AccountResponse = z.object({
  id: z.string(),
  email: z.string(),
  usage: z.object({
    sandboxHours: z.object({
      used: z.number().meta({ description: 'Sandbox-hours used this calendar month (UTC)' }),
      limit: z.number(),
    }),
    concurrentSandboxes: z.object({ active: z.int(), limit: z.int() }),
    snapshotStorage: z.object({
      usedBytes: z.int().meta({ description: "Bytes the account's ready snapshots hold, as stored" }),
      limitBytes: z.int(),
    }),
  }),
  period: z.object({ start: timestamp, end: timestamp }),
});
