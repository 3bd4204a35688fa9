import type { Middleware, Next } from 'koa';
import type { AppContext, AppState } from '../context.ts';
import type { HttpMethod } from './route.ts';

/** One step of a route's chain. */
export type Handler = (ctx: AppContext, next: Next) => unknown;

interface MountedRoute {
  path: string;
  /** Upper case; HEAD wherever GET is, as @koa/router did. */
  methods: string[];
  pattern: RegExp;
  paramNames: string[];
  run: (ctx: AppContext, next: Next) => Promise<unknown>;
}

// The methods a route can have: any other answers 501 where a route has the path (then 405 to the client).
const IMPLEMENTED = new Set(['HEAD', 'OPTIONS', 'GET', 'PUT', 'PATCH', 'POST', 'DELETE']);

/**
 * Routes by a path's shape, its number of segments and its first two, to the few routes of that
 * shape (GET and DELETE /v1/sandboxes/:id share one; /v1/account has one of its own), each
 * route's chain composed once, at start. Within a shape it decides what @koa/router decided:
 * which route matches (case-insensitive, one trailing slash allowed, parameters URI-decoded) and
 * what a wrong method answers (405 or 501 and Allow; OPTIONS 200 and Allow). @koa/router tested
 * every route's pattern in turn and composed the matched chain anew on every request.
 */
export class ShapedRouter {
  readonly #shapes = new Map<string, MountedRoute[]>();

  add(method: HttpMethod, path: string, ...middleware: Handler[]): void {
    const key = shapeOf(path);
    if (key.includes(':')) throw new Error(`${path}: a route's first two segments must be literal, to be routed by shape`);
    let routes = this.#shapes.get(key);
    if (!routes) this.#shapes.set(key, (routes = []));
    const upper = method.toUpperCase();
    if (routes.some((r) => r.path === path && r.methods.includes(upper))) throw new Error(`${upper} ${path} is mounted twice`);
    const { pattern, paramNames } = compile(path);
    routes.push({ path, methods: upper === 'GET' ? ['HEAD', 'GET'] : [upper], pattern, paramNames, run: compose(middleware) });
  }

  get(path: string, ...middleware: Handler[]): void {
    this.add('get', path, ...middleware);
  }

  /** Every route, of every shape: the inventory (test/security/api9-inventory.test.ts reads it). */
  get stack(): { path: string; methods: string[] }[] {
    return [...this.#shapes.values()].flat().map(({ path, methods }) => ({ path, methods: [...methods] }));
  }

  /** The app's one routing middleware: an unknown shape falls through, to be answered 404. */
  middleware(): Middleware<AppState> & { router: ShapedRouter } {
    const shapes = this.#shapes;
    const dispatch = (ctx: AppContext, next: Next): Promise<unknown> => {
      const path = ctx.path;
      const routes = shapes.get(shapeOf(path));
      if (!routes) return next();
      const method = ctx.method;
      let allowed: string[] | undefined;
      for (const route of routes) {
        const match = route.pattern.exec(path);
        if (!match) continue;
        if (route.methods.includes(method)) return enter(ctx, route, match, next);
        (allowed ??= []).push(...route.methods);
      }
      return next().then(() => answerNearMiss(ctx, method, allowed));
    };
    return Object.assign(dispatch as Middleware<AppState>, { router: this });
  }
}

function enter(ctx: AppContext, route: MountedRoute, match: RegExpExecArray, next: Next): Promise<unknown> {
  const params: Record<string, string> = {};
  for (let i = 0; i < route.paramNames.length; i++) params[route.paramNames[i]!] = safeDecode(match[i + 1]!);
  ctx.params = params;
  (ctx.request as { params?: Record<string, string> }).params = params;
  (ctx as { _matchedRoute?: string })._matchedRoute = route.path;
  return route.run(ctx, next);
}

/** A path some route has, with a method none of them takes (or none at all: `allowed` undefined). */
function answerNearMiss(ctx: AppContext, method: string, allowed: string[] | undefined): void {
  if (ctx.status !== 404 || ctx.body != null) return;
  const list = [...new Set(allowed)];
  if (!IMPLEMENTED.has(method)) {
    ctx.status = 501;
    ctx.set('Allow', list.join(', '));
  } else if (list.length === 0) {
    return;
  } else if (method === 'OPTIONS') {
    ctx.status = 200;
    ctx.body = '';
    ctx.set('Allow', list.join(', '));
  } else {
    ctx.status = 405;
    ctx.set('Allow', list.join(', '));
  }
}

/** @koa/router's reading of a path (path-to-regexp: `:name` is one segment, one trailing slash allowed). */
function compile(path: string): { pattern: RegExp; paramNames: string[] } {
  const paramNames: string[] = [];
  const source = path
    .split('/')
    .map((segment) => {
      if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');
      if (!/^:\w+$/.test(segment)) throw new Error(`${path}: a parameter is a whole segment, :name`);
      paramNames.push(segment.slice(1));
      return '([^/]+)';
    })
    .join('/');
  return { pattern: new RegExp(`^${source}/?$`, 'i'), paramNames };
}

function compose(middleware: Handler[]): (ctx: AppContext, next: Next) => Promise<unknown> {
  return (ctx, next) => {
    const step = (i: number): Promise<unknown> => {
      const fn = middleware[i];
      if (!fn) return next();
      try {
        return Promise.resolve(fn(ctx, () => step(i + 1)));
      } catch (err) {
        return Promise.reject(err);
      }
    };
    return step(0);
  };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * "3 /v1/sandboxes" for /v1/sandboxes/:id and /v1/sandboxes/sbx_…. Lower case, and without one
 * trailing slash, as the routes match (case-insensitive, not strict).
 */
export function shapeOf(path: string): string {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  let segments = 0;
  let secondEnd = -1;
  for (let i = 0; i < trimmed.length; i++) {
    if (trimmed.charCodeAt(i) !== 47 /* / */) continue;
    segments++;
    if (segments === 3) secondEnd = i;
  }
  return `${segments} ${(secondEnd === -1 ? trimmed : trimmed.slice(0, secondEnd)).toLowerCase()}`;
}
