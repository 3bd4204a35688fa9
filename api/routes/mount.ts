import { z } from 'zod';
import { ApiError } from '../../shared/errors.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { authenticate, authenticateWebSocket, requireScope } from '../middleware/authenticate.ts';
import { rateLimit } from '../middleware/rate-limit.ts';
import { admitInFlight } from '../middleware/in-flight.ts';
import { refuseOnProbation } from '../middleware/probation.ts';
import { jsonBody, streamedBody } from '../middleware/body.ts';
import { parseInput } from '../middleware/validate.ts';
import type { Route, RouteInput, RouteSpec } from './route.ts';
import type { Handler, ShapedRouter } from './shaped-router.ts';

const NO_QUERY = z.strictObject({});
const WITH_BODY = new Set(['post', 'put', 'patch']);

/** Builds each route's chain from its spec: auth, rate limit, body, validation, handler. */
export function mountRoutes(router: ShapedRouter, routes: Route[], deps: AppDeps): void {
  for (const { spec, handler } of routes) {
    const chain: Handler[] = [];
    if (spec.websocket) chain.push(authenticateWebSocket(deps));
    else if (spec.auth !== 'none') chain.push(authenticate(spec.auth, deps, { bucket: spec.bucket, scope: spec.scope }));
    else chain.push(refuseOnProbation);
    if (spec.scope) chain.push(requireScope(spec.scope));
    if (spec.bucket) chain.push(rateLimit(spec.bucket, deps));
    // A place in flight is taken once the request is whole: a client trickling its JSON body must
    // not hold one (16 such requests would lock an account out of exec until they time out). A
    // streamed body is the work itself, and is admitted before it is read.
    if (spec.streamedBody) {
      if (spec.inFlight) chain.push(admitInFlight(spec.inFlight, deps));
      chain.push(streamedBody(spec.streamedBody.mediaTypes, spec.streamedBody.limitBytes(deps)));
    } else {
      if (WITH_BODY.has(spec.method) || spec.body) {
        const defaultLimit = deps.config.PADDOCK_BODY_LIMIT_BYTES;
        chain.push(jsonBody(spec.bodyLimitBytes?.(deps) ?? defaultLimit, { largeField: spec.bodyLargeField, otherLimitBytes: defaultLimit }));
      }
      if (spec.inFlight) chain.push(admitInFlight(spec.inFlight, deps));
    }
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
