import type { EntityManager } from '@mikro-orm/postgresql';
import type { Rows, Statement } from '../db/batch.ts';
import { execute } from '../db/placeholders.ts';

// The warm pool's rows (shared/pool/warm-pool.ts says what the pool is): one per pooled sandbox,
// `starting` from before its runtime create until it is `ready`; a claim deletes it. Every read
// and write of them is here, but for the reaper's orphan check, which reads them in one snapshot
// with the sandboxes' rows (workers/reaper.ts).

/** How many the pool holds of an image in a deployment, starting or ready. */
export async function countPooled(em: EntityManager, deployment: string, image: string): Promise<number> {
  const [row] = await execute<{ held: number }>(em, `select count(*)::int as held from warm_sandboxes where deployment = $1 and image = $2`, [deployment, image]);
  return row?.held ?? 0;
}

/** Its row before its runtime sandbox: a crash between the two leaves a row the sweep removes, never a runtime sandbox it cannot tell from an orphan. */
export async function addStarting(em: EntityManager, id: string, deployment: string, image: string): Promise<void> {
  await execute(em, `insert into warm_sandboxes (id, deployment, image, status) values ($1, $2, $3, 'starting')`, [id, deployment, image]);
}

export async function markReady(em: EntityManager, id: string): Promise<void> {
  await execute(em, `update warm_sandboxes set status = 'ready', ready_at = now() where id = $1`, [id]);
}

/** Takes these out of the pool; answers those it held. */
export async function removePooled(em: EntityManager, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  return (await execute<{ id: string }>(em, 'delete from warm_sandboxes where id in ($1) returning id', [ids])).map((r) => r.id);
}

export interface StaleRules {
  deployment: string;
  /** A start older than this is one a crashed refill left. */
  startingSeconds: number;
  /** A ready one older than this is replaced (PADDOCK_WARM_POOL_MAX_AGE_SECONDS). */
  readySeconds: number;
  /** The images pooled now; the others' go. */
  images: string[];
  /** The most each image keeps (PADDOCK_WARM_POOL_SIZE), the newest first. */
  size: number;
}

/** Takes out of the pool, in one statement, what it should no longer hold; answers their ids. */
export async function removeStale(em: EntityManager, rules: StaleRules): Promise<string[]> {
  const rows = await execute<{ id: string }>(
    em,
    `delete from warm_sandboxes w
      where w.deployment = $1 and (
            (w.status = 'starting' and w.created_at < now() - make_interval(secs => $2))
         or (w.status = 'ready' and w.ready_at < now() - make_interval(secs => $3))
         or w.image not in ($4)
         or w.id in (select id from (select id, row_number() over (partition by image order by ready_at desc nulls first) as n
                                       from warm_sandboxes where deployment = $1) r where r.n > $5))
      returning w.id`,
    [
      rules.deployment,
      rules.startingSeconds,
      rules.readySeconds,
      // A list is spelled out as placeholders, and `in ()` is not SQL: no image is the empty name.
      rules.images.length > 0 ? rules.images : [''],
      rules.size,
    ],
  );
  return rows.map((r) => r.id);
}

/** The ids of those ready since before `at`. */
export async function readyBefore(em: EntityManager, deployment: string, at: Date): Promise<string[]> {
  return (await execute<{ id: string }>(em, `select id from warm_sandboxes where deployment = $1 and status = 'ready' and ready_at < $2`, [deployment, at])).map((r) => r.id);
}

/**
 * Takes a ready pooled sandbox of `image` out of the pool, in a create's batch (`claimedFrom`
 * reads its id, none when the pool has none ready). SKIP LOCKED: concurrent creates each take a
 * different one, and none waits on another's; a create that rolls back puts it back.
 */
export function claimWarmStatement(deployment: string, image: string): Statement {
  return {
    sql: `delete from warm_sandboxes where id = (
       select id from warm_sandboxes where deployment = $1 and image = $2 and status = 'ready' order by ready_at limit 1 for update skip locked)
     returning id`,
    params: [deployment, image],
  };
}

export function claimedFrom(rows: Rows): string | undefined {
  return rows[0]?.id as string | undefined;
}
