import type { z } from 'zod';
import type { ErrorCode } from '../../shared/errors.ts';
import type { AppContext, AppDeps } from '../context.ts';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type AuthKind = 'none' | 'dashboard' | 'apiKey';
export type BucketName = 'auth' | 'sandbox_ops' | 'sandbox_lifecycle';

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
  summary: string;
  tag: string;
  auth: AuthKind;
  bucket?: BucketName;
  body?: B;
  query?: Q;
  params?: P;
  /** Overrides the default body size limit (file create, exec). */
  bodyLimitBytes?: (deps: AppDeps) => number;
  responses: Record<
    number,
    { description: string; schema?: z.ZodType; contentType?: string; alternatives?: { contentType: string; schema: z.ZodType }[] }
  >;
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
