import type { IncomingMessage, ServerResponse } from 'node:http';
import { fieldSelector, labelSelector } from './selectors.ts';
import { badRequest, sendJson, sendStatus, StatusError, unauthorized } from './status.ts';
import type { PodStore } from './store.ts';
import type { ObjectJson, ObjectStore } from './objects.ts';
import type { PodJson } from './types.ts';
import { serveWatch } from './watch.ts';

const MAX_BODY_BYTES = 3 * 1024 * 1024; // the API server's own request size limit

export const POD_COLLECTION = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/;
export const POD = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/;
export const POD_EXEC = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/;
export const POD_PORTFORWARD = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/portforward$/;

export interface RestContext {
  store: PodStore;
  /** NetworkPolicies, Secrets and ConfigMaps: kept as given. */
  objects: ObjectStore<ObjectJson>[];
  token: string;
  openWatches: Set<ServerResponse>;
}

export function isAuthorized(req: IncomingMessage, token: string): boolean {
  return req.headers.authorization === `Bearer ${token}`;
}

/** The plain HTTP part of the API: pods, their list and watch, the objects kept as given, and the version endpoint. */
export async function handleRest(ctx: RestContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    if (!isAuthorized(req, ctx.token)) throw unauthorized();
    const url = new URL(req.url ?? '/', 'http://standin');
    const path = url.pathname;
    const query = url.searchParams;
    let m: RegExpExecArray | null;

    if (path === '/version' && req.method === 'GET') {
      return sendJson(res, 200, { major: '1', minor: '33', gitVersion: 'v1.33.0-paddock-standin', platform: 'linux/amd64' });
    }
    if ((m = POD_COLLECTION.exec(path))) {
      const namespace = decodeURIComponent(m[1]!);
      if (req.method === 'POST') {
        const pod = ctx.store.create(namespace, await readJson(req));
        return sendJson(res, 201, pod);
      }
      if (req.method === 'GET') {
        const labels = labelSelector(query.get('labelSelector'));
        const fields = fieldSelector(query.get('fieldSelector'));
        const matches = (pod: PodJson) => labels(pod) && fields(pod);
        const watch = query.get('watch');
        if (watch === 'true' || watch === '1') {
          return serveWatch(req, res, ctx.store, namespace, matches, query, ctx.openWatches);
        }
        return sendJson(res, 200, listPage(ctx.store, namespace, matches, query));
      }
      throw methodNotAllowed(req.method);
    }
    if ((m = POD.exec(path))) {
      const namespace = decodeURIComponent(m[1]!);
      const name = decodeURIComponent(m[2]!);
      if (req.method === 'GET') return sendJson(res, 200, ctx.store.get(namespace, name));
      if (req.method === 'DELETE') {
        const body = await readJson(req, true);
        const grace = query.get('gracePeriodSeconds') ?? (body as { gracePeriodSeconds?: number } | undefined)?.gracePeriodSeconds;
        const deleted = ctx.store.delete(namespace, name, grace === undefined ? undefined : Number(grace));
        for (const objects of ctx.objects) objects.ownerGone(deleted.metadata.uid);
        return sendJson(res, 200, deleted);
      }
      throw methodNotAllowed(req.method);
    }
    for (const objects of ctx.objects) {
      const { kind, apiVersion, collection, item } = objects.kind;
      if ((m = collection.exec(path))) {
        const namespace = decodeURIComponent(m[1]!);
        if (req.method === 'POST') return sendJson(res, 201, objects.create(namespace, await readJson(req)));
        if (req.method === 'GET') {
          const labels = labelSelector(query.get('labelSelector'));
          const watch = query.get('watch');
          if (watch === 'true' || watch === '1') return serveWatch(req, res, objects, namespace, labels, query, ctx.openWatches);
          return sendJson(res, 200, { kind: `${kind}List`, apiVersion, metadata: { resourceVersion: String(objects.currentVersion) }, items: objects.list(namespace, labels) });
        }
        throw methodNotAllowed(req.method);
      }
      if ((m = item.exec(path))) {
        const namespace = decodeURIComponent(m[1]!);
        const name = decodeURIComponent(m[2]!);
        if (req.method === 'GET') return sendJson(res, 200, objects.get(namespace, name));
        if (req.method === 'PUT') return sendJson(res, 200, objects.replace(namespace, name, await readJson(req)));
        if (req.method === 'PATCH') return sendJson(res, 200, objects.patch(namespace, name, await readJson(req), req.headers['content-type']));
        if (req.method === 'DELETE') return sendJson(res, 200, objects.delete(namespace, name));
        throw methodNotAllowed(req.method);
      }
    }
    if (POD_EXEC.exec(path) || POD_PORTFORWARD.exec(path)) throw badRequest('Upgrade request required');
    throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
  } catch (err) {
    if (err instanceof StatusError) return sendStatus(res, err);
    console.error('k8s stand-in: request failed', err);
    return sendStatus(res, new StatusError(500, 'InternalError', (err as Error)?.message ?? String(err)));
  }
}

// limit and continue, as the API server pages a list: the token is where the last page ended.
function listPage(store: PodStore, namespace: string, matches: (pod: PodJson) => boolean, query: URLSearchParams) {
  let items = store.list(namespace, matches);
  const after = query.get('continue');
  if (after) {
    const last = Buffer.from(after, 'base64url').toString();
    items = items.filter((p) => p.metadata.name > last);
  }
  const limit = Number(query.get('limit'));
  let next: string | undefined;
  if (limit > 0 && items.length > limit) {
    items = items.slice(0, limit);
    next = Buffer.from(items[items.length - 1]!.metadata.name).toString('base64url');
  }
  return {
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion: String(store.currentVersion), ...(next ? { continue: next } : {}) },
    items,
  };
}

function methodNotAllowed(method: string | undefined): StatusError {
  return new StatusError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource (${method})`);
}

async function readJson(req: IncomingMessage, optional = false): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new StatusError(413, 'RequestEntityTooLarge', 'the request is too large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    if (optional) return undefined;
    throw badRequest('the request body is empty');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw badRequest('the request body is not valid JSON');
  }
}
