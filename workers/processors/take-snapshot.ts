import type { Job } from 'bullmq';
import { parsePayload } from '../../shared/jobs/catalogue.ts';
import type { Snapshots } from '../../shared/snapshots/snapshots.ts';

/** What the snapshot job needs: the snapshots' home (shared/snapshots/snapshots.ts). */
export interface SnapshotJobDeps {
  snapshots: Pick<Snapshots, 'complete'>;
}

/** Copies a snapshot taken without waiting; its failure is the snapshot's (failed, with its event), not the job's. */
export async function takeSnapshotJob(job: Job, deps: SnapshotJobDeps): Promise<string> {
  const { snapshotId, accountId } = parsePayload('snapshot', job.data);
  return deps.snapshots.complete(accountId, snapshotId);
}
