import type { PaddockClient } from '../api/index.ts';
import type { Snapshot } from '../api/types.ts';

export function createSnapshot(client: PaddockClient, sessionId: string, input: { name?: string; wait?: boolean }): Promise<Snapshot> {
  return client.createSnapshot(sessionId, input.name === undefined ? {} : { name: input.name }, { wait: input.wait });
}

/** Every snapshot of the account, newest first. */
export async function listSnapshots(client: PaddockClient): Promise<Snapshot[]> {
  const all: Snapshot[] = [];
  for await (const s of client.snapshots()) all.push(s);
  return all;
}

export function deleteSnapshot(client: PaddockClient, snapshotId: string): Promise<void> {
  return client.deleteSnapshot(snapshotId);
}
