import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildOpenApi } from '../../api/openapi.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { chainOf, routeErrors } from '../../api/routes/chain.ts';
import { errorCatalogue } from '../../shared/errors.ts';

// The one contract: the OpenAPI document generated from the route specs is a valid
// OpenAPI 3.1 document (checked by a real validator against the specification's own schema), names
// every operation and schema, and declares the headers and error codes each operation answers.

type Json = Record<string, unknown>;
const doc = buildOpenApi(allRoutes, '1.0.0') as Json & {
  paths: Record<string, Record<string, Json & { operationId: string; parameters: Json[]; responses: Record<string, Json> }>>;
  components: { schemas: Record<string, Json> };
};
const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op })));

test('the document is valid OpenAPI 3.1', async () => {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc));
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  assert.equal(validator.version, '3.1');
});

test('every operation has a unique operationId, the one its route spec names', () => {
  const ids = operations.map(({ op }) => op.operationId);
  assert.equal(ids.length, allRoutes.length);
  assert.equal(new Set(ids).size, ids.length, `duplicates: ${ids.filter((id, i) => ids.indexOf(id) !== i).join(', ')}`);
  for (const id of ids) assert.match(id, /^[a-z][A-Za-z0-9]*$/);
});

test('bodies and responses are named component schemas, every $ref resolves, and no $schema is left', () => {
  const text = JSON.stringify(doc);
  assert.doesNotMatch(text, /"\$schema"/);
  for (const [, ref] of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) assert.ok(doc.components.schemas[ref!], `unresolved $ref ${ref}`);
  for (const { key, op } of operations) {
    const body = (op.requestBody as { content?: Record<string, { schema: Json }> } | undefined)?.content?.['application/json']?.schema;
    if (body) assert.ok(body.$ref, `${key}: request body inlined`);
    for (const [status, response] of Object.entries(op.responses)) {
      for (const [type, media] of Object.entries((response.content ?? {}) as Record<string, { schema: Json }>)) {
        if (type !== 'application/problem+json') assert.ok(media.schema.$ref, `${key} ${status} ${type}: inlined`);
      }
    }
  }
  for (const name of ['Sandbox', 'SandboxList', 'ExecRequest', 'ExecResult', 'ExecStreamEvent', 'Account', 'CreateSandboxRequest', 'Problem']) {
    assert.ok(doc.components.schemas[name], name);
  }
});

test('headers: X-Request-Id on every answer, rate limits on bucketed successes, Retry-After on 429 and 503, Location on what is created, Idempotency-Key and Last-Event-ID', () => {
  for (const route of allRoutes) {
    const op = doc.paths[route.spec.path.replace(/:(\w+)/g, '{$1}')]![route.spec.method]!;
    assert.ok(op.parameters.some((p) => p.in === 'header' && p.name === 'X-Request-Id'), `${op.operationId}: X-Request-Id`);
    for (const [status, response] of Object.entries(op.responses)) {
      const headers = (response.headers ?? {}) as Json;
      assert.ok(headers['X-Request-Id'], `${op.operationId} ${status}: X-Request-Id`);
      if (route.spec.bucket && Number(status) < 300) assert.ok(headers['X-RateLimit-Limit'] && headers['X-RateLimit-Remaining'], `${op.operationId} ${status}`);
      if (status === '429' || status === '503') assert.ok(headers['Retry-After'], `${op.operationId} ${status}: Retry-After`);
    }
  }
  const create = doc.paths['/v1/sandboxes']!.post!;
  assert.ok(create.parameters.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'));
  for (const [path, method, status] of [['/v1/sandboxes', 'post', '201'], ['/v1/webhooks', 'post', '201'], ['/v1/sandboxes/{id}/exec', 'post', '202']] as const) {
    assert.ok((doc.paths[path]![method]!.responses[status]!.headers as Json).Location, `${method} ${path} ${status}: Location`);
  }
  assert.ok(doc.paths['/v1/events']!.get!.parameters.some((p) => p.in === 'header' && p.name === 'Last-Event-ID'));
});

test("each error response lists exactly the codes of its status that the route can answer", () => {
  for (const route of allRoutes) {
    const op = doc.paths[route.spec.path.replace(/:(\w+)/g, '{$1}')]![route.spec.method]!;
    const listed = new Map<string, string[]>();
    for (const [status, r] of Object.entries(op.responses)) {
      const schema = (r.content as Record<string, { schema: { allOf?: Json[] } }> | undefined)?.['application/problem+json']?.schema;
      if (!schema) continue;
      const codes = (schema.allOf?.[1]?.properties as { code: { enum: string[] } }).code.enum;
      assert.equal(r.description, codes.join(', '), `${op.operationId} ${status}`);
      listed.set(status, codes);
    }
    const expected = new Map<string, string[]>();
    for (const code of routeErrors(route.spec)) {
      const status = String(errorCatalogue[code].status);
      expected.set(status, [...(expected.get(status) ?? []), code]);
    }
    assert.deepEqual(listed, expected, op.operationId);
    for (const code of route.spec.errors) assert.ok(listed.get(String(errorCatalogue[code].status))?.includes(code), `${op.operationId}: ${code}`);
  }
});

test("the codes of a route's chain come from its spec: credentials, scope, rate limit, in-flight cap and body, never from a hand-kept list", () => {
  for (const { spec } of allRoutes) {
    const codes = routeErrors(spec);
    const has = (code: string) => codes.includes(code as never);
    const what = `${spec.method.toUpperCase()} ${spec.path}`;
    assert.equal(has('missing_credential') && has('invalid_credential') && has('wrong_credential_type'), spec.auth !== 'none', what);
    assert.equal(has('insufficient_scope'), spec.scope !== undefined, what);
    if (spec.bucket) assert.ok(has('rate_limited'), what);
    if (spec.inFlight || spec.auth !== 'none') assert.ok(has('too_many_in_flight'), what);
    if (spec.body || spec.streamedBody) assert.ok(has('payload_too_large') && has('unsupported_media_type'), what);
    for (const code of ['invalid_request', 'internal_error', 'service_unavailable', 'server_busy']) assert.ok(has(code), `${what}: ${code}`);
    // A route's own list holds only what its handler answers beyond the chain.
    const chain = new Set(chainOf(spec).flatMap((step) => step.errors));
    for (const code of spec.errors) assert.ok(!chain.has(code), `${what} lists ${code}, which its chain answers`);
  }
});
