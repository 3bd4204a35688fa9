import Router, { type RouterMiddleware } from '@koa/router';
import type { Middleware } from 'koa';
import type { AppState } from '../context.ts';
import type { HttpMethod } from './route.ts';

/**
 * Routes by a path's shape, its number of segments and its first two, to a router holding only
 * the routes of that shape (GET and DELETE /v1/sandboxes/:id share one; /v1/account has one of
 * its own). @koa/router tests every route's pattern in turn, and builds a match for each: with
 * forty routes that was most of the routing's cost on every request. Within a shape it still
 * decides, as before, which route matches and what a wrong method answers (405 and Allow).
 */
export class ShapedRouter {
  readonly #routers = new Map<string, Router<AppState>>();

  add(method: HttpMethod, path: string, ...middleware: RouterMiddleware<AppState>[]): void {
    const key = shapeOf(path);
    if (key.includes(':')) throw new Error(`${path}: a route's first two segments must be literal, to be routed by shape`);
    let router = this.#routers.get(key);
    if (!router) this.#routers.set(key, (router = new Router<AppState>()));
    router[method](path, ...middleware);
  }

  get(path: string, ...middleware: RouterMiddleware<AppState>[]): void {
    this.add('get', path, ...middleware);
  }

  /** Every route, of every shape: the inventory (test/security/api9-inventory.test.ts reads it). */
  get stack(): Router<AppState>['stack'] {
    return [...this.#routers.values()].flatMap((router) => router.stack);
  }

  /** The app's one routing middleware: an unknown shape falls through, to be answered 404. */
  middleware(): Middleware<AppState> & { router: ShapedRouter } {
    const byShape = new Map<string, Middleware<AppState>>();
    for (const [key, router] of this.#routers) {
      const routes = router.routes() as Middleware<AppState>;
      const allowed = router.allowedMethods() as Middleware<AppState>;
      byShape.set(key, (ctx, next) => routes(ctx, () => allowed(ctx, next)));
    }
    const dispatch: Middleware<AppState> = (ctx, next) => {
      const routes = byShape.get(shapeOf(ctx.path));
      return routes ? routes(ctx, next) : next();
    };
    return Object.assign(dispatch, { router: this });
  }
}

/**
 * "3 /v1/sandboxes" for /v1/sandboxes/:id and /v1/sandboxes/sbx_…. Lower case, and without one
 * trailing slash, as @koa/router matches (case-insensitive, not strict).
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
