import type { Job } from 'bullmq';
import { parsePayload } from '../../shared/jobs/catalogue.ts';
import { newId } from '../../shared/ids.ts';
import { POOL_ACCOUNT } from '../../shared/pool/warm-pool.ts';
import { deploymentOf } from '../../shared/deployment.ts';
import type { WorkerDeps } from '../context.ts';

/**
 * Starts pooled sandboxes of one image until the pool holds PADDOCK_WARM_POOL_SIZE of them
 * (starting or ready). One runs per image at a time (its job id), and it counts again after each
 * start, so claims made meanwhile are made good in the same run.
 */
export async function refillPoolJob(job: Job, deps: WorkerDeps): Promise<string> {
  const { image } = parsePayload('refill', job.data);
  const deployment = deploymentOf(deps.config);
  let started = 0;
  for (;;) {
    const em = deps.orm.em.fork();
    const [{ held } = { held: 0 }] = await em.execute<{ held: number }[]>(`select count(*)::int as held from warm_sandboxes where deployment = ? and image = ?`, [deployment, image]);
    if (held >= deps.config.PADDOCK_WARM_POOL_SIZE) return `started ${started}`;
    const id = newId('sbx');
    // The row first: a crash between it and the runtime leaves a row the sweep removes, never a
    // runtime sandbox the sweep cannot tell from an orphan.
    await em.execute(`insert into warm_sandboxes (id, deployment, image, status) values (?, ?, ?, 'starting')`, [id, deployment, image]);
    try {
      // Its cap starts at the claim: the runtime's own backstop allows the longest wait in the
      // pool and a whole session after it.
      const capSeconds = deps.config.PADDOCK_WARM_POOL_MAX_AGE_SECONDS + deps.config.PADDOCK_SESSION_CAP_SECONDS;
      await deps.runtime.create({ id, accountId: POOL_ACCOUNT, image, capSeconds }, { timeoutMs: deps.config.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS * 1000 });
    } catch (err) {
      await em.execute(`delete from warm_sandboxes where id = ?`, [id]);
      await deps.runtime.destroy(id).catch(() => undefined);
      throw err;
    }
    await em.execute(`update warm_sandboxes set status = 'ready', ready_at = now() where id = ?`, [id]);
    started++;
  }
}
