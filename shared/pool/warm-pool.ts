import { createHash } from 'node:crypto';
import type { Rows, Statement } from '../db/batch.ts';
import type { Config } from '../config.ts';
import { deploymentOf } from '../deployment.ts';
import type { SandboxRuntime } from '../runtime/types.ts';

// The warm pool: sandboxes started ahead of demand, per image, belonging to no account. A create
// claims one atomically (it leaves the pool and becomes the account's sandbox, running, in the
// create's own transaction); queue jobs refill the pool; the reaper's sweep is the backstop (it
// refills, replaces pooled sandboxes past PADDOCK_WARM_POOL_MAX_AGE_SECONDS, and never takes a
// pooled sandbox for an orphan).

/** The runtime's accountId of a pooled sandbox: no account's. */
export const POOL_ACCOUNT = 'pool';

/**
 * The images pooled: those PADDOCK_WARM_POOL_IMAGES lists, else the runtime's default. A listed
 * image the runtime refuses is not pooled, as no create could be given it (and a create must not
 * fail over the pool's configuration).
 */
export function pooledImages(config: Config, runtime: Pick<SandboxRuntime, 'defaultImage' | 'resolveImage'>): string[] {
  if (config.PADDOCK_WARM_POOL_SIZE === 0) return [];
  const listed = config.PADDOCK_WARM_POOL_IMAGES.split(',').map((s) => s.trim()).filter(Boolean);
  if (listed.length === 0) return [runtime.defaultImage];
  return [...new Set(listed.filter((image) => runs(runtime, image)))];
}

function runs(runtime: Pick<SandboxRuntime, 'resolveImage'>, image: string): boolean {
  try {
    return runtime.resolveImage(image) === image;
  } catch {
    return false;
  }
}

export function isPooled(config: Config, runtime: Pick<SandboxRuntime, 'defaultImage' | 'resolveImage'>, image: string): boolean {
  return pooledImages(config, runtime).includes(image);
}

/** A job id for an image's refill (image names hold characters job ids may not). */
export function imageKey(image: string): string {
  return createHash('sha256').update(image).digest('hex').slice(0, 16);
}

/**
 * Takes a ready pooled sandbox of `image` out of the pool (`claimedFrom` reads its id, none when
 * the pool has none ready). SKIP LOCKED: concurrent creates each take a different one, and none
 * waits on another's; a create that rolls back puts it back.
 */
export function claimWarmStatement(config: Config, image: string): Statement {
  return {
    sql: `delete from warm_sandboxes where id = (
       select id from warm_sandboxes where deployment = ? and image = ? and status = 'ready' order by ready_at limit 1 for update skip locked)
     returning id`,
    params: [deploymentOf(config), image],
  };
}

export function claimedFrom(rows: Rows): string | undefined {
  return rows[0]?.id as string | undefined;
}
