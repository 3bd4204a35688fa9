import { z } from 'zod';
import { booleanFlag, listOf, timestamp } from '../common-schemas.ts';

export const SnapshotParams = z.strictObject({ snapshotId: z.string().max(100) });

export const CreateSnapshotBody = z.strictObject({
  name: z.string().min(1).max(200).optional().meta({ description: 'A name of your own for it' }),
});

export const CreateSnapshotQuery = z.strictObject({
  wait: booleanFlag
    .default(true)
    .meta({ description: 'Answer once the copy is whole (default), or at once with status pending: snapshot.created or snapshot.failed tells its end' }),
});

export const ListSnapshotsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  after: z.string().max(100).optional().meta({ description: "The previous page's next (a snapshot id): the snapshots taken before it" }),
});

export const SnapshotObject = z.object({
  id: z.string(),
  name: z.string().nullable(),
  sandboxId: z.string().meta({ description: 'The sandbox it was taken from' }),
  image: z.string().meta({ description: "The image of that sandbox: a sandbox started from the snapshot gets it unless its create names another" }),
  status: z.enum(['pending', 'ready', 'failed']),
  failureCode: z.string().nullable().meta({ description: "A failed snapshot's reason: the error code a request would have been answered with" }),
  sizeBytes: z.number().int().meta({ description: 'As stored, compressed: what counts against PADDOCK_QUOTA_SNAPSHOT_BYTES' }),
  files: z.number().int().meta({ description: 'Files, directories and links in it' }),
  createdAt: timestamp,
  expiresAt: timestamp.meta({ description: 'It is deleted then (PADDOCK_SNAPSHOT_RETENTION_DAYS after it was taken)' }),
});

export const SnapshotList = listOf(SnapshotObject).extend({
  next: z.string().nullable().meta({ description: 'Pass as ?after= for the next page; null on the last page' }),
});
