import { createHash } from 'node:crypto';
import type { Config } from '../config.ts';
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
export function pooledImages(config: Pick<Config, 'PADDOCK_WARM_POOL_SIZE' | 'PADDOCK_WARM_POOL_IMAGES'>, runtime: Pick<SandboxRuntime, 'defaultImage' | 'resolveImage'>): string[] {
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

export function isPooled(config: Pick<Config, 'PADDOCK_WARM_POOL_SIZE' | 'PADDOCK_WARM_POOL_IMAGES'>, runtime: Pick<SandboxRuntime, 'defaultImage' | 'resolveImage'>, image: string): boolean {
  return pooledImages(config, runtime).includes(image);
}

/** A job id for an image's refill (image names hold characters job ids may not). */
export function imageKey(image: string): string {
  return createHash('sha256').update(image).digest('hex').slice(0, 16);
}
