import type { Sandbox } from '../db/entities.ts';
import type { PresentableSandbox } from './present.ts';
import type { NetworkPolicy } from '../network/policy.ts';

// A sandbox as the API presents it, from a row read with SANDBOX_COLUMNS: what an event about it
// carries (data.sandbox), taken inside the transaction that changed it.
export const SANDBOX_COLUMNS = `id, account_id, state, status, image, metadata, created_at, ready_at, expires_at,
  destroyed_at, destroy_reason, failure_message, snapshot_on_destroy, final_snapshot_id, network, network_refused`;

export interface SandboxRow {
  id: string;
  account_id: string;
  state: Sandbox['state'];
  status: Sandbox['status'];
  image: string;
  metadata: Record<string, string>;
  created_at: Date;
  ready_at: Date | null;
  expires_at: Date;
  destroyed_at: Date | null;
  destroy_reason: Sandbox['destroyReason'];
  failure_message: string | null;
  snapshot_on_destroy: boolean;
  final_snapshot_id: string | null;
  network: NetworkPolicy;
  network_refused: number;
}

/** The row as the presenter takes it (present.ts): an event's sandbox, as every answer shows it. */
export function presentableRow(row: SandboxRow): PresentableSandbox {
  return {
    id: row.id,
    state: row.state,
    status: row.status,
    image: row.image,
    metadata: row.metadata,
    createdAt: row.created_at,
    readyAt: row.ready_at,
    expiresAt: row.expires_at,
    destroyedAt: row.destroyed_at,
    destroyReason: row.destroy_reason,
    failureMessage: row.failure_message,
    snapshotOnDestroy: row.snapshot_on_destroy,
    finalSnapshotId: row.final_snapshot_id,
    network: row.network,
    networkRefused: row.network_refused,
  };
}
