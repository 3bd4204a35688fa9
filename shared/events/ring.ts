import type { DestroyReason, Sandbox, SandboxState, SandboxStatus } from '../db/entities.ts';
import type { RecordedEvent } from './types.ts';

// What the ring says (one Redis channel that every API replica hears): whose events changed, and
// for each sandbox an event reports, the fields a transition changes, as of that event's commit.
// A create or destroy waiting on the sandbox answers from them without reading its row; an event
// stream reads PostgreSQL, the record, either way. A message from a process before the sandboxes
// were carried is the account id alone, and still rings.

/** The fields of a sandbox that its transitions change; the rest never change after its create. */
export interface SandboxTransition {
  id: string;
  state: SandboxState;
  status: SandboxStatus;
  readyAt: string | null;
  destroyedAt: string | null;
  destroyReason: DestroyReason | null;
  failureMessage: string | null;
  finalSnapshotId: string | null;
}

export interface Ring {
  accountId: string;
  sandboxes: SandboxTransition[];
}

/** The message for one account's events, just committed. */
export function ringMessage(accountId: string, events: readonly RecordedEvent[]): string {
  const sandboxes: SandboxTransition[] = [];
  for (const event of events) {
    const s = event.data.sandbox as Partial<SandboxTransition> | undefined;
    if (event.accountId !== accountId || !s?.id) continue;
    sandboxes.push({
      id: s.id,
      state: s.state!,
      status: s.status!,
      readyAt: s.readyAt ?? null,
      destroyedAt: s.destroyedAt ?? null,
      destroyReason: s.destroyReason ?? null,
      failureMessage: s.failureMessage ?? null,
      finalSnapshotId: s.finalSnapshotId ?? null,
    });
  }
  return sandboxes.length === 0 ? accountId : JSON.stringify({ a: accountId, s: sandboxes });
}

/** The message as sent; undefined for one that is neither form (it wakes nothing). */
export function parseRing(message: string): Ring | undefined {
  if (!message.startsWith('{')) return message.length > 0 ? { accountId: message, sandboxes: [] } : undefined;
  try {
    const { a, s } = JSON.parse(message) as { a?: unknown; s?: unknown };
    if (typeof a !== 'string' || !Array.isArray(s)) return undefined;
    return { accountId: a, sandboxes: s.filter(isTransition) };
  } catch {
    return undefined;
  }
}

function isTransition(value: unknown): value is SandboxTransition {
  const t = value as SandboxTransition | null;
  return typeof t?.id === 'string' && typeof t.state === 'string' && typeof t.status === 'string';
}

/** How far along its life a transition leaves a sandbox: a later one never gives way to an earlier one heard after it. */
export function progressOf(t: Pick<SandboxTransition, 'state' | 'status'>): number {
  if (t.state === 'destroyed') return 3;
  return t.status === 'terminating' ? 2 : t.status === 'running' ? 1 : 0;
}

/** The sandbox as the transition left it. */
export function withTransition(sandbox: Sandbox, t: SandboxTransition): Sandbox {
  const dateOf = (iso: string | null) => (iso === null ? null : new Date(iso));
  return {
    ...sandbox,
    state: t.state,
    status: t.status,
    readyAt: dateOf(t.readyAt),
    destroyedAt: dateOf(t.destroyedAt),
    destroyReason: t.destroyReason,
    failureMessage: t.failureMessage,
    finalSnapshotId: t.finalSnapshotId ?? null,
  };
}
