import type { Sandbox } from '../db/entities.ts';
import { dateOf, isoOf } from '../db/timestamps.ts';
import { NO_EGRESS, type NetworkPolicy } from '../network/policy.ts';

/**
 * What of a sandbox the API shows: a row as read (timestamps as Date or, through the ORM's pool,
 * text) or a sandbox as the API holds it. Nothing else of it (its env, its account) is shown.
 */
export interface PresentableSandbox {
  id: string;
  state: Sandbox['state'];
  status: Sandbox['status'];
  image: string;
  metadata: Record<string, string>;
  createdAt: Date | string;
  readyAt?: Date | string | null;
  expiresAt: Date | string;
  destroyedAt?: Date | string | null;
  destroyReason?: Sandbox['destroyReason'] | null;
  failureMessage?: string | null;
  snapshotOnDestroy?: boolean;
  finalSnapshotId?: string | null;
  /** Absent: a row read before the column (none, as the migration's default). */
  network?: NetworkPolicy;
  networkRefused?: number;
}

export type PresentedSandbox = ReturnType<typeof presentSandbox>;

/** The one shape of a sandbox: every API answer about it, and every event's data.sandbox. */
export function presentSandbox(sandbox: PresentableSandbox) {
  return {
    id: sandbox.id,
    state: sandbox.state,
    status: sandbox.status,
    image: sandbox.image,
    createdAt: dateOf(sandbox.createdAt).toISOString(),
    readyAt: isoOf(sandbox.readyAt ?? null),
    expiresAt: dateOf(sandbox.expiresAt).toISOString(),
    destroyedAt: isoOf(sandbox.destroyedAt ?? null),
    destroyReason: sandbox.destroyReason ?? null,
    failureMessage: sandbox.failureMessage ?? null,
    snapshotOnDestroy: sandbox.snapshotOnDestroy ?? false,
    finalSnapshotId: sandbox.finalSnapshotId ?? null,
    network: sandbox.network ?? NO_EGRESS,
    networkRefused: sandbox.networkRefused ?? 0,
    metadata: sandbox.metadata,
  };
}
