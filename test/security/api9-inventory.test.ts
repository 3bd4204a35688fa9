import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createApp } from '../../api/app.ts';
import type { ShapedRouter } from '../../api/routes/shaped-router.ts';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';

// OWASP API9:2023 Improper Inventory Management: the OpenAPI document is the inventory, and it is
// exact. Every route the application mounts is documented there, or is one of the four operational
// endpoints (probes, metrics, the document itself); every documented operation is served; nothing
// else answers. (test/api/operational.test.ts checks the document against the route list, its
// error enum and its security; test/fuzz/routes.test.ts checks that every error code a route
// answers is one the document lists for it.)

const api = await startTestApi();
const OPERATIONAL = ['GET /healthz', 'GET /readyz', 'GET /metrics', 'GET /v1/openapi.json'];

interface OpenApi {
  paths: Record<string, Record<string, { security: unknown[] }>>;
}

/** What the application's router really mounts, as "METHOD /path/{param}" (HEAD is GET's). */
function mounted(): string[] {
  const app = createApp(api.deps);
  const dispatch = app.middleware.find((m) => 'router' in m) as unknown as { router: ShapedRouter } | undefined;
  assert.ok(dispatch, 'the app mounts a router');
  const out = new Set<string>();
  for (const layer of dispatch.router.stack) {
    for (const method of layer.methods) {
      if (method === 'HEAD') continue;
      out.add(`${method} ${String(layer.path).replace(/:(\w+)/g, '{$1}')}`);
    }
  }
  return [...out].sort();
}

test('the OpenAPI document lists exactly the mounted routes, the operational endpoints aside', async () => {
  const doc = (await call(api.url, 'GET', '/v1/openapi.json')).body as OpenApi;
  const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
  const served = mounted();
  const undocumented = served.filter((op) => !documented.includes(op) && !OPERATIONAL.includes(op));
  const unserved = documented.filter((op) => !served.includes(op));
  assert.deepEqual(undocumented, [], 'mounted but not documented');
  assert.deepEqual(unserved, [], 'documented but not mounted');
  for (const op of OPERATIONAL) assert.ok(served.includes(op), `${op} is mounted`);
});

test('every documented operation is served: none answers the router\'s 404 or 405', async () => {
  const account = await newAccount(api.url, 'api9');
  const doc = (await call(api.url, 'GET', '/v1/openapi.json')).body as OpenApi;
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const method of Object.keys(ops)) {
      const concrete = path.replace(/\{(\w+)\}/g, 'x');
      const token = path.startsWith('/v1/api-keys') ? account.token : account.key;
      // A body with an unknown field: the route answers 400 without doing anything (no sandbox is made).
      const res = await call(api.url, method.toUpperCase(), concrete, { token, body: ['post', 'put', 'patch'].includes(method) ? { probe: 1 } : undefined });
      assert.ok(!(res.status === 404 && res.body.code === 'not_found'), `${method.toUpperCase()} ${path}: the router does not know it`);
      assert.notEqual(res.status, 405, `${method.toUpperCase()} ${path}`);
    }
  }
});

test('nothing else answers: old versions, admin and debug paths, other document names', async () => {
  const account = await newAccount(api.url, 'api9-shadow');
  const shadows = [
    '/v0/account',
    '/v2/account',
    '/v1.1/account',
    '/api/v1/account',
    '/v1/admin',
    '/v1/debug',
    '/v1/internal/accounts',
    '/v1/users',
    '/v1/accounts',
    '/v1/sandboxes/x/logs',
    '/v1/sandboxes/x/backups',
    '/v1/api-keys/x/rotate',
    '/v1/metrics',
    '/v1/health',
    '/v1/openapi.yaml',
    '/openapi.json',
    '/swagger.json',
    '/docs',
    '/graphql',
    '/debug/pprof',
    '/.env',
    '/.git/config',
    '/server-status',
  ];
  for (const path of shadows) {
    for (const method of ['GET', 'POST']) {
      const res = await call(api.url, method, path, { token: account.key, body: method === 'POST' ? {} : undefined });
      assertProblem(res, 404, 'not_found');
    }
  }
});

test('the document describes the API it is served by: version, servers, security schemes', async () => {
  const doc = (await call(api.url, 'GET', '/v1/openapi.json')).body as OpenApi & {
    openapi: string;
    info: { version: string };
    servers: { url: string }[];
    components: { securitySchemes: Record<string, unknown> };
  };
  assert.match(doc.openapi, /^3\.1\./);
  assert.ok(doc.info.version);
  assert.ok(doc.servers.length > 0);
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['apiKey', 'dashboardToken']);
  for (const [path, ops] of Object.entries(doc.paths)) {
    assert.ok(path.startsWith('/v1/'), `${path} is outside /v1`);
    for (const [method, op] of Object.entries(ops)) {
      for (const requirement of op.security as Record<string, unknown>[]) {
        for (const scheme of Object.keys(requirement)) assert.ok(scheme in doc.components.securitySchemes, `${method} ${path}: ${scheme}`);
      }
    }
  }
});
