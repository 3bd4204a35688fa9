import type { Job } from 'bullmq';
import { parsePayload } from '../../shared/jobs/catalogue.ts';
import { newId } from '../../shared/ids.ts';
import { POOL_ACCOUNT } from '../../shared/pool/warm-pool.ts';
import { addStarting, countPooled, markReady, removePooled } from '../../shared/repositories/warm-pool.ts';
import { deploymentOf } from '../../shared/deployment.ts';
import type { WorkerDeps } from '../context.ts';

/**
 * Starts pooled sandboxes of one image until the pool holds PADDOCK_WARM_POOL_SIZE of them
 * (starting or ready). One runs per image at a time (its job id), and it counts again after each
 * round of starts, so claims made meanwhile are made good in the same run.
 */
export async function refillPoolJob(job: Job, deps: WorkerDeps): Promise<string> {
  const { image } = parsePayload('refill', job.data);
  const deployment = deploymentOf(deps.config);
  let started = 0;
  for (;;) {
    const held = await countPooled(deps.orm.em.fork(), deployment, image);
    const missing = deps.config.PADDOCK_WARM_POOL_SIZE - held;
    if (missing <= 0) return `started ${started}`;
    // Several starts at once: a pod takes seconds to start (a local sandbox too on a busy host), and
    // a pool drained by a burst of creates would otherwise come back one start at a time.
    const round = await Promise.allSettled(Array.from({ length: Math.min(missing, deps.config.PADDOCK_WARM_POOL_REFILL_CONCURRENCY) }, () => startPooled(deps, deployment, image)));
    started += round.filter((r) => r.status === 'fulfilled').length;
    const failed = round.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/** One pooled sandbox, from its row to its runtime sandbox ready; nothing of it left if it fails. */
async function startPooled(deps: WorkerDeps, deployment: string, image: string): Promise<void> {
  const em = deps.orm.em.fork();
  const id = newId('sbx');
  await addStarting(em, id, deployment, image);
  try {
    // Its cap starts at the claim: the runtime's own backstop allows the longest wait in the
    // pool and a whole session after it.
    const capSeconds = deps.config.PADDOCK_WARM_POOL_MAX_AGE_SECONDS + deps.config.PADDOCK_SESSION_CAP_SECONDS;
    await deps.runtime.create({ id, accountId: POOL_ACCOUNT, image, capSeconds }, { timeoutMs: deps.config.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS * 1000 });
  } catch (err) {
    await removePooled(em, [id]);
    await deps.runtime.destroy(id).catch(() => undefined);
    throw err;
  }
  await markReady(em, id);
}
