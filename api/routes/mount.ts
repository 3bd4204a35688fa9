import { z } from 'zod';
import { ApiError } from '../../shared/errors.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { parseInput } from '../middleware/validate.ts';
import { chainOf } from './chain.ts';
import type { Route, RouteInput, RouteSpec } from './route.ts';
import type { ShapedRouter } from './shaped-router.ts';

const NO_QUERY = z.strictObject({});

/** Builds each route's chain from its spec (chain.ts), then validation and its handler. */
export function mountRoutes(router: ShapedRouter, routes: Route[], deps: AppDeps): void {
  for (const { spec, handler } of routes) {
    const chain = chainOf(spec).map((step) => step.build(deps));
    chain.push(async (ctx: AppContext) => {
      await handler(ctx, readInput(ctx, spec), deps);
    });
    router.add(spec.method, spec.path, ...chain);
  }
}

function readInput(ctx: AppContext, spec: RouteSpec): RouteInput<RouteSpec> {
  let body: unknown;
  if (spec.body) {
    // No body at all means "all defaults"; an explicit JSON null is validated (and refused) as sent.
    body = parseInput(spec.body, ctx.state.rawBody === undefined ? {} : ctx.state.rawBody, 'body');
  } else if (ctx.state.rawBody !== undefined) {
    throw new ApiError('invalid_request', `${ctx.method} ${spec.path} takes no request body.`);
  }
  // Most requests have no query string: skip validating an empty one where none is expected.
  const query = !spec.query && ctx.querystring === '' ? {} : parseInput(spec.query ?? NO_QUERY, { ...ctx.query }, 'query');
  const params = spec.params ? parseInput(spec.params, ctx.params, 'path') : undefined;
  return { body, query, params } as RouteInput<RouteSpec>;
}
