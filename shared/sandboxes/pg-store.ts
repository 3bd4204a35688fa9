import type { MikroORM } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import type { DestroyReason, Sandbox } from '../db/entities.ts';
import { inBatchedTransaction } from '../db/batch.ts';
import { ormPool } from '../db/orm.ts';
import type { Announcer } from '../events/announce.ts';
import { eventsStatement, recordedFrom } from '../repositories/events.ts';
import { lockAccountStatement, overridesFrom, usageFrom, usageStatement } from '../repositories/accounts.ts';
import { completeIdempotencyKey, idempotencyInsertStatement, idempotencyReadStatement, idempotencyRecordFrom } from '../repositories/idempotency.ts';
import { getAllowlist } from '../repositories/policy.ts';
import { findSandbox, insertSandboxStatement, markSandboxTerminating, moveSandboxEnd, readOwnSandbox, setSandboxNetwork, type MovedEnd } from '../repositories/sandboxes.ts';
import { claimedFrom, claimWarmStatement } from '../repositories/warm-pool.ts';
import { markDestroyed, markExpiring, markRunning, markTerminating, type DestroyedEnd, type PendingSandbox } from './transitions.ts';
import type { LifecycleStore } from './lifecycle.ts';
import type { SandboxRow } from './snapshot.ts';
import type { NetworkPolicy } from '../network/policy.ts';
import type { CreateDecision, CreateFacts, CreateRequest, CreateResult, SandboxStore } from './ports.ts';

/**
 * The sandbox store on PostgreSQL: the repositories' statements, sent as the engine's rules
 * need them. `reads` is the pool of the hot reads (a sandbox, an allowlist); the ORM's pool takes
 * the transactions and the changes.
 */
export class PgSandboxStore implements SandboxStore {
  readonly #orm: MikroORM;
  readonly #reads: Pool | undefined;
  readonly #announcer: Announcer;

  constructor(orm: MikroORM, announcer: Announcer, reads?: Pool) {
    this.#orm = orm;
    this.#announcer = announcer;
    this.#reads = reads;
  }

  async #readPool(): Promise<Pool> {
    return this.#reads ?? (await ormPool(this.#orm.em));
  }

  async allowlistCommands(accountId: string): Promise<string[]> {
    return (await getAllowlist(await this.#readPool(), accountId)).commands;
  }

  /** Two round trips: the lock with everything read under it, then the writes with the commit. */
  create(request: CreateRequest, decide: (facts: CreateFacts) => CreateDecision): Promise<CreateResult> {
    const { accountId, claimImage, idempotencyKey } = request;
    return inBatchedTransaction(this.#orm.em.fork(), async (tx) => {
      const [locked, usage, ...rest] = await tx.send([
        lockAccountStatement(accountId),
        usageStatement(accountId, request.periodStart),
        // From the warm pool when it has one ready: a refused create rolls back, which puts it back.
        ...(claimImage === undefined ? [] : [claimWarmStatement(request.deployment, claimImage)]),
        ...(idempotencyKey ? [idempotencyReadStatement(accountId, idempotencyKey)] : []),
      ]);
      const claim = claimImage === undefined ? undefined : rest.shift();
      const decision = decide({
        overrides: overridesFrom(locked ?? []),
        usage: usageFrom(usage ?? []),
        claimed: claim && claimedFrom(claim),
        replay: idempotencyKey ? idempotencyRecordFrom(rest.shift() ?? []) : undefined,
      });
      if ('replay' in decision) {
        await tx.rollback();
        return decision;
      }
      const { sandbox, events, idempotency } = decision;
      // The account's row is held FOR UPDATE since the first batch (the events' order needs it).
      // The sandbox's row and its events: one statement.
      const { statement, ids } = eventsStatement(events, insertSandboxStatement(sandbox));
      const [eventRows] = await tx.commitWith([
        statement,
        ...(idempotency ? [idempotencyInsertStatement(accountId, idempotency.key, idempotency.requestHash, sandbox.id)] : []),
      ]);
      return { sandbox, created: recordedFrom(ids, eventRows) };
    });
  }

  async completeIdempotencyKey(accountId: string, key: string): Promise<void> {
    await completeIdempotencyKey(await ormPool(this.#orm.em), accountId, key);
  }

  async findOwn(accountId: string, id: string): Promise<Sandbox | undefined> {
    return readOwnSandbox(await this.#readPool(), accountId, id);
  }

  async moveEnd(accountId: string, id: string, end: { expiresAt: Date; expiryWarningAt: Date | null; now: Date }): Promise<MovedEnd | undefined> {
    return moveSandboxEnd(await ormPool(this.#orm.em), accountId, id, end);
  }

  async setNetwork(accountId: string, id: string, policy: NetworkPolicy, apply: () => Promise<void>): Promise<Sandbox | 'not_running' | undefined> {
    return setSandboxNetwork(await ormPool(this.#orm.em), accountId, id, policy, apply);
  }

  async markTerminatingByItsUser(accountId: string, id: string): Promise<Sandbox | undefined> {
    return markSandboxTerminating(await ormPool(this.#orm.em), id, 'user', accountId);
  }

  async markDestroyed(id: string, reason: DestroyReason, failureMessage?: string): Promise<boolean> {
    return (await markDestroyed(this.#orm.em.fork(), id, reason, { failureMessage }, this.#announcer)) !== undefined;
  }
}

/** The workers' sandbox store on PostgreSQL: the transitions, each announcing what it recorded. */
export class PgLifecycleStore implements LifecycleStore {
  readonly #orm: MikroORM;
  readonly #announcer: Announcer;

  constructor(orm: MikroORM, announcer: Announcer) {
    this.#orm = orm;
    this.#announcer = announcer;
  }

  async find(id: string): Promise<Sandbox | undefined> {
    return findSandbox(await ormPool(this.#orm.em), id);
  }

  markRunning(pending: PendingSandbox): Promise<boolean> {
    return markRunning(this.#orm.em.fork(), pending, this.#announcer);
  }

  markTerminating(id: string, reason: DestroyReason, dueBy?: Date): Promise<boolean> {
    return markTerminating(this.#orm.em.fork(), id, reason, this.#announcer, dueBy);
  }

  markDestroyed(id: string, reason: DestroyReason, end?: DestroyedEnd): Promise<SandboxRow | undefined> {
    return markDestroyed(this.#orm.em.fork(), id, reason, end, this.#announcer);
  }

  markExpiring(id: string): Promise<boolean> {
    return markExpiring(this.#orm.em.fork(), id, this.#announcer);
  }
}
