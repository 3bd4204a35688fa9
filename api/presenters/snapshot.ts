import type { SnapshotRow } from '../../shared/repositories/snapshots.ts';

/** A snapshot as the API shows it: never its digest or where it is stored. */
export function presentSnapshot(row: SnapshotRow) {
  return {
    id: row.id,
    name: row.name,
    sandboxId: row.sandbox_id,
    image: row.image,
    status: row.status,
    failureCode: row.failure_code,
    sizeBytes: Number(row.size_bytes),
    files: row.files,
    createdAt: new Date(row.created_at).toISOString(),
    expiresAt: new Date(row.expires_at).toISOString(),
  };
}
