import { enqueue } from '../shared/jobs/catalogue.ts';
import { pooledImages } from '../shared/pool/warm-pool.ts';
import { readyBefore, removePooled, removeStale } from '../shared/repositories/warm-pool.ts';
import { deploymentOf } from '../shared/deployment.ts';
import { settleWithin } from '../shared/settle-within.ts';
import type { WorkerDeps } from './context.ts';

const QUEUE_WITHIN_MS = 2000;

/**
 * The warm pool's part of the reaper sweep: removes what a crashed refill left starting, pooled
 * sandboxes past their age, and those of images (or beyond the size) no longer pooled, each taken
 * out of the pool before its runtime sandbox goes so that no create can claim it meanwhile; then
 * asks for each pooled image's refill, which makes up what is missing.
 */
export async function tendWarmPool(deps: WorkerDeps, inParallel: (ids: string[], work: (id: string) => Promise<unknown>) => Promise<void>): Promise<void> {
  const images = pooledImages(deps.config, deps.runtime);
  const deployment = deploymentOf(deps.config);
  const removed = await removeStale(deps.orm.em.fork(), {
    deployment,
    startingSeconds: deps.config.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS * 2,
    readySeconds: deps.config.PADDOCK_WARM_POOL_MAX_AGE_SECONDS,
    images,
    size: deps.config.PADDOCK_WARM_POOL_SIZE,
  });
  // A pooled sandbox that stopped running in the pool (gone, failed, terminated; not a pod the
  // cluster reports pending for a moment) must never be handed out. Only those ready before the
  // runtime was asked: one made ready since may be missing from its answer.
  const listedAt = new Date(Date.now() - 1000);
  const running = new Set((await deps.runtime.list()).filter((s) => s.status === 'running' || s.status === 'pending').map((s) => s.id));
  const dead = (await readyBefore(deps.orm.em.fork(), deployment, listedAt)).filter((id) => !running.has(id));
  removed.push(...(await removePooled(deps.orm.em.fork(), dead)));
  await inParallel(removed, (id) => deps.runtime.destroy(id));
  for (const image of images) await settleWithin(deps.redis, () => enqueue(deps.queue, 'refill', { image }), QUEUE_WITHIN_MS);
}
