import { errorCodes, type ErrorCode } from '../../shared/errors.ts';
import type { AppDeps } from '../context.ts';
import { AUTHENTICATION_ERRORS, SCOPE_ERRORS, authenticate, authenticateWebSocket, requireScope } from '../middleware/authenticate.ts';
import { RATE_LIMIT_ERRORS, rateLimit } from '../middleware/rate-limit.ts';
import { IN_FLIGHT_ERRORS, admitInFlight } from '../middleware/in-flight.ts';
import { PROBATION_ERRORS, refuseOnProbation } from '../middleware/probation.ts';
import { JSON_BODY_ERRORS, STREAMED_BODY_ERRORS, jsonBody, streamedBody } from '../middleware/body.ts';
import { INPUT_ERRORS } from '../middleware/validate.ts';
import { FRAME_ERRORS } from '../middleware/request-frame.ts';
import type { RouteSpec } from './route.ts';
import type { Handler } from './shaped-router.ts';

const WITH_BODY = new Set(['post', 'put', 'patch']);

/** One step before a route's handler: the codes it can answer, and its middleware for a process. */
export interface ChainStep {
  errors: readonly ErrorCode[];
  build(deps: AppDeps): Handler;
}

/**
 * The steps a route's spec puts before its handler: auth, scope, rate limit, body, in-flight cap.
 * Both the chain that serves the route (mount.ts) and the codes its OpenAPI operation lists
 * (routeErrors) come from here, so the document names every refusal the chain can make.
 */
export function chainOf(spec: RouteSpec): ChainStep[] {
  const steps: ChainStep[] = [];
  if (spec.websocket) steps.push({ errors: AUTHENTICATION_ERRORS, build: (deps) => authenticateWebSocket(deps) });
  else if (spec.auth !== 'none') {
    const kind = spec.auth;
    // A route with an in-flight cap whose body is JSON (or none) has its lease taken by the key's lookup.
    const lease = spec.inFlight && !spec.streamedBody ? { kind: spec.inFlight, leasedView: spec.leasedView } : undefined;
    steps.push({ errors: AUTHENTICATION_ERRORS, build: (deps) => authenticate(kind, deps, { bucket: spec.bucket, scope: spec.scope, lease }) });
  } else steps.push({ errors: PROBATION_ERRORS, build: () => refuseOnProbation });
  const { scope, bucket, inFlight, leasedView, streamedBody: streamed } = spec;
  if (scope) steps.push({ errors: SCOPE_ERRORS, build: () => requireScope(scope) });
  if (bucket) steps.push({ errors: RATE_LIMIT_ERRORS, build: (deps) => rateLimit(bucket, deps) });
  const admit: ChainStep | undefined = inFlight ? { errors: IN_FLIGHT_ERRORS, build: (deps) => admitInFlight({ kind: inFlight, leasedView }, deps) } : undefined;
  // A place in flight is taken once the request is whole: a client trickling its JSON body must
  // not hold one (16 such requests would lock an account out of exec until they time out). A
  // streamed body is the work itself, and is admitted before it is read.
  if (streamed) {
    if (admit) steps.push(admit);
    steps.push({ errors: STREAMED_BODY_ERRORS, build: (deps) => streamedBody(streamed.mediaTypes, streamed.limitBytes(deps.config)) });
  } else {
    if (WITH_BODY.has(spec.method) || spec.body) {
      steps.push({
        errors: JSON_BODY_ERRORS,
        build: (deps) => {
          const defaultLimit = deps.config.PADDOCK_BODY_LIMIT_BYTES;
          return jsonBody(spec.bodyLimitBytes?.(deps.config) ?? defaultLimit, { largeField: spec.bodyLargeField, otherLimitBytes: defaultLimit });
        },
      });
    }
    if (admit) steps.push(admit);
  }
  return steps;
}

/**
 * Every code the route can answer, in the catalogue's order: those of any request, of its input's
 * validation, of its chain's steps, and its handler's own (the spec's `errors`).
 */
export function routeErrors(spec: RouteSpec): ErrorCode[] {
  const codes = new Set<ErrorCode>([...FRAME_ERRORS, ...INPUT_ERRORS, ...chainOf(spec).flatMap((step) => step.errors), ...spec.errors]);
  return errorCodes.filter((code) => codes.has(code));
}
