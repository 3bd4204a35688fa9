import type { EntityManager } from '@mikro-orm/postgresql';
import { Sandbox, type DestroyReason } from '../db/entities.ts';

// Every change of a sandbox's state is a conditional update: it applies only from the state it
// expects, so two processes racing (a worker finishing a create while a user destroys, two
// reapers) can never move a sandbox backwards or destroy it twice.

/** pending → running. False when the sandbox was meanwhile destroyed or is being destroyed. */
export async function markRunning(em: EntityManager, id: string): Promise<boolean> {
  const n = await em.nativeUpdate(Sandbox, { id, state: 'active', status: 'pending' }, { status: 'running', readyAt: new Date() });
  return n === 1;
}

/** Asks for destruction: status terminating, the first reason given wins. False if already destroyed. */
export async function markTerminating(em: EntityManager, id: string, reason: DestroyReason): Promise<boolean> {
  const n = await em.nativeUpdate(Sandbox, { id, state: 'active', status: { $ne: 'terminating' } }, { status: 'terminating', destroyReason: reason });
  if (n === 1) return true;
  const row = await em.findOne(Sandbox, { id }, { fields: ['state'], disableIdentityMap: true });
  return row?.state === 'active';
}

/** active → destroyed; a sandbox destroyed for `failed` ends with status failed, else terminated. */
export async function markDestroyed(
  em: EntityManager,
  id: string,
  reason: DestroyReason,
  failureMessage?: string,
): Promise<boolean> {
  const row = await em.findOne(Sandbox, { id }, { fields: ['state', 'destroyReason'], disableIdentityMap: true });
  if (!row || row.state === 'destroyed') return false;
  const finalReason = row.destroyReason ?? reason;
  const n = await em.nativeUpdate(
    Sandbox,
    { id, state: 'active' },
    {
      state: 'destroyed',
      status: finalReason === 'failed' ? 'failed' : 'terminated',
      destroyedAt: new Date(),
      destroyReason: finalReason,
      ...(failureMessage ? { failureMessage: failureMessage.slice(0, 1000) } : {}),
    },
  );
  // A sandbox's own secrets go with it.
  await em.execute('delete from secrets where sandbox_id = ?', [id]);
  return n === 1;
}
