import { ApiError } from '../../../shared/errors.ts';
import { sameSecret } from '../../../shared/same-secret.ts';
import { ping } from '../../../shared/repositories/database.ts';
import { refuseOnProbation } from '../../middleware/probation.ts';
import type { AppContext, AppDeps } from '../../context.ts';
import { buildOpenApi } from '../../openapi.ts';
import { allRoutes } from '../index.ts';
import type { ShapedRouter } from '../shaped-router.ts';

const CHECK_TIMEOUT_MS = 2000;

/**
 * Probes, metrics and the OpenAPI document: unauthenticated, not rate limited, not /v1 resources;
 * not served on a connection on probation (api/connection-allowance.ts).
 */
export function mountOperationalRoutes(router: ShapedRouter, deps: AppDeps): void {
  let openApi: string | undefined;

  router.get('/healthz', refuseOnProbation, (ctx: AppContext) => {
    ctx.body = { status: 'ok' };
  });

  router.get('/readyz', refuseOnProbation, async (ctx: AppContext) => {
    const [postgres, redis] = await Promise.all([
      check(() => ping(deps.orm.em.fork())),
      // The queue's own connection too: after Redis comes back, it reconnects on its own schedule,
      // and until it has, every create and destroy through this process would answer 503.
      check(() => Promise.all([deps.redis.ping(), queueConnected(deps)])),
    ]);
    const ready = postgres && redis;
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'unavailable', checks: { postgres, redis } };
  });

  router.get('/v1/openapi.json', refuseOnProbation, (ctx: AppContext) => {
    openApi ??= JSON.stringify(buildOpenApi(allRoutes, '1.0.0'));
    ctx.type = 'application/json';
    ctx.body = openApi;
  });

  router.get('/metrics', refuseOnProbation, async (ctx: AppContext) => {
    const token = deps.config.PADDOCK_METRICS_TOKEN;
    if (token && !sameSecret(ctx.get('authorization'), `Bearer ${token}`)) throw new ApiError('invalid_credential');
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });
}

async function queueConnected(deps: AppDeps): Promise<void> {
  const { status } = await deps.queue.backend.client;
  if (status !== 'ready') throw new Error(`the queue's Redis connection is ${status}`);
}

async function check(probe: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([probe().then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
