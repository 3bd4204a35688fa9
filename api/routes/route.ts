import type { z } from 'zod';
import type { Config } from '../../shared/config.ts';
import type { ErrorCode } from '../../shared/errors.ts';
import type { Scope } from '../../shared/scopes.ts';
import type { AppContext, AppDeps } from '../context.ts';
import type { BucketName } from '../ratelimit/buckets.ts';
import type { InFlightKind } from '../ratelimit/in-flight.ts';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type AuthKind = 'none' | 'dashboard' | 'apiKey';

/**
 * Everything about one route in one place: the chain that serves it (auth, rate limit,
 * validation) and the OpenAPI document are both derived from this, so they cannot disagree.
 */
export interface RouteSpec<
  B extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  P extends z.ZodType = z.ZodType,
> {
  method: HttpMethod;
  /** Koa-style path: `/v1/api-keys/:keyId`. */
  path: string;
  /** Unique and stable: the name of the operation in the OpenAPI document and in generated clients. */
  operationId: string;
  summary: string;
  tag: string;
  auth: AuthKind;
  /** The API-key scope the route needs (every API-key route names one). */
  scope?: Scope;
  bucket?: BucketName;
  inFlight?: InFlightKind;
  /**
   * With inFlight: the name of the account's read view (shared/cache/read-views.ts) of the
   * sandbox `:id` that the handler reads first, fetched in the lease's round trip (ctx.state.leasedView).
   */
  leasedView?: (sandboxId: string) => string;
  body?: B;
  query?: Q;
  params?: P;
  /** Overrides the default body size limit (file create, exec). */
  bodyLimitBytes?: (config: Config) => number;
  /**
   * With bodyLimitBytes: the one top-level member that may use it (stdin, a file's content);
   * the others together stay within the default body limit, so a large body is large data, not a
   * large structure for the schema to walk.
   */
  bodyLargeField?: string;
  /**
   * A body that is data, not JSON (an archive): read as it comes by the handler, never buffered
   * and never given to the JSON reader. Only these media types are taken (else 415); past
   * limitBytes, declared or counted as it streams, 413.
   */
  streamedBody?: { mediaTypes: string[]; limitBytes: (config: Config) => number; description: string };
  /**
   * A WebSocket route: the GET is an upgrade to this subprotocol, authenticated by the key header
   * or by a terminal ticket (`?ticket=`), answered 101 or, refused, with a problem document.
   */
  websocket?: { subprotocol: string };
  /** Request headers the route reads (documented as parameters). */
  requestHeaders?: { name: string; description: string }[];
  responses: Record<
    number,
    {
      description: string;
      schema?: z.ZodType;
      contentType?: string;
      alternatives?: { contentType: string; schema: z.ZodType }[];
      /** Headers this answer carries besides those of every answer (X-Request-Id) and of a bucket: name, description. */
      headers?: Record<string, string>;
    }
  >;
  /**
   * The codes the handler and what it calls can answer. Those of the chain the spec builds
   * (credentials, scope, rate limit, in-flight cap, body, input validation) and those of any
   * request are not listed here: routeErrors (chain.ts) adds them from the spec.
   */
  errors: ErrorCode[];
}

type Infer<T> = T extends z.ZodType ? z.output<T> : undefined;

export interface RouteInput<S extends RouteSpec> {
  body: Infer<S['body']>;
  query: Infer<S['query']>;
  params: Infer<S['params']>;
}

export type RouteHandler<S extends RouteSpec> = (ctx: AppContext, input: RouteInput<S>, deps: AppDeps) => Promise<void>;

export interface Route<S extends RouteSpec = RouteSpec> {
  spec: S;
  handler: RouteHandler<S>;
}

export function route<const S extends RouteSpec>(spec: S, handler: RouteHandler<S>): Route {
  return { spec, handler: handler as RouteHandler<RouteSpec> };
}

/** The account behind the request's credential; only called on authenticated routes. */
export function accountIdOf(ctx: AppContext): string {
  if (!ctx.state.auth) throw new Error('accountIdOf called on an unauthenticated route');
  return ctx.state.auth.accountId;
}
