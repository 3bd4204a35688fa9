import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import type { Route } from '../../api/routes/route.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { credentialFor, NOTES, routeKey, routesWhere, validRequestFor, Workspace, pathParams } from './fixtures.ts';

// test-plan: once (ownership is decided before any runtime is asked)

// OWASP API1:2023 Broken Object Level Authorization. Every route that names an object by id, in
// its path, query or body, is swept from the route list: another account's id answers exactly as
// a missing one does (same status, code, title, detail with the id, extra members, headers), and
// the owner's object is untouched afterwards. Per-family checks already exist (test/api/
// api-keys.test.ts, test/sandboxes/lifecycle.test.ts, test/files/files.test.ts "another account's
// sandbox… on every file route", test/exec/secrets.test.ts); this is the one sweep over all routes.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '20' } });
const [ownerAccount, stranger] = await Promise.all([newAccount(stack.url, 'owner'), newAccount(stack.url, 'stranger')]);
const owner = new Workspace(stack.url, ownerAccount);
const strangerSpace = new Workspace(stack.url, stranger);

/** Which object each id names, and the answer for one that is not the caller's. */
const ID_KINDS: Record<string, { code: string; missing: string }> = {
  id: { code: 'sandbox_not_found', missing: `sbx_${'0'.repeat(24)}` },
  keyId: { code: 'api_key_not_found', missing: `key_${'0'.repeat(24)}` },
  name: { code: 'secret_not_found', missing: 'NO_SUCH_SECRET' },
  sandboxId: { code: 'sandbox_not_found', missing: `sbx_${'0'.repeat(24)}` },
  webhookId: { code: 'webhook_not_found', missing: `wh_${'0'.repeat(24)}` },
  snapshotId: { code: 'snapshot_not_found', missing: `snap_${'0'.repeat(24)}` },
  // The path names the owner's sandbox too, which answers first; a process id of another sandbox
  // named in one's own sandbox (process_not_found) is swept in test/exec/background.test.ts.
  procId: { code: 'sandbox_not_found', missing: `proc_${'0'.repeat(24)}` },
  // Likewise: the path names the owner's sandbox, which answers first.
  port: { code: 'sandbox_not_found', missing: '65535' },
};

const hasField = (schema: z.ZodType | undefined, field: string) =>
  !!schema && field in ((z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as { properties?: object }).properties ?? {});

/** Where a route takes an object id: path parameters, and sandboxId in its query or body. */
function idInputs(route: Route): { where: 'path' | 'query' | 'body'; name: string }[] {
  const inputs: { where: 'path' | 'query' | 'body'; name: string }[] = pathParams(route).map((name) => ({ where: 'path', name }));
  if (hasField(route.spec.query, 'sandboxId')) inputs.push({ where: 'query', name: 'sandboxId' });
  if (hasField(route.spec.body, 'sandboxId')) inputs.push({ where: 'body', name: 'sandboxId' });
  return inputs;
}

const targets = routesWhere((r) => idInputs(r).length > 0);

// What the stranger sends where the owner's valid request would be harmless: writes that would show.
const ATTACK_BODIES: Record<string, unknown> = {
  'PUT /v1/sandboxes/:id/files': { content: 'pwned\n' },
  'PATCH /v1/sandboxes/:id/files': { oldText: 'hello', newText: 'pwned' },
  'POST /v1/sandboxes/:id/exec': { command: 'echo pwned > /workspace/notes.txt' },
  'POST /v1/secrets': { name: 'PLANTED', value: 'pwned' },
};

function pathRegex(route: Route): RegExp {
  return new RegExp(`^${route.spec.path.replace(/:(\w+)/g, '(?<$1>[^/?]+)')}(?:\\?|$)`);
}

const headerNames = (res: JsonResponse) =>
  [...res.headers.keys()].filter((h) => !['x-request-id', 'date', 'content-length', 'x-ratelimit-remaining'].includes(h)).sort();

/** The stranger's request naming `id` answers exactly as the one naming `missing`. */
async function assertLikeMissing(what: string, send: (id: string) => Promise<JsonResponse>, foreignId: string, missingId: string, code: string) {
  const foreign = await send(foreignId);
  const missing = await send(missingId);
  assertProblem(foreign, 404, code);
  assertProblem(missing, 404, code);
  const normalise = (body: Record<string, unknown>, id: string) =>
    JSON.parse(JSON.stringify({ ...body, requestId: undefined }).replaceAll(id, '<id>')) as unknown;
  assert.deepEqual(normalise(foreign.body, foreignId), normalise(missing.body, missingId), what);
  assert.deepEqual(headerNames(foreign), headerNames(missing), `${what}: headers`);
}

test('every route that names an object by id is covered by this sweep', () => {
  for (const route of targets) {
    for (const input of idInputs(route)) {
      const kind = ID_KINDS[input.name];
      assert.ok(kind, `${routeKey(route)}: an id named ${input.name} that this suite does not know; add it to ID_KINDS`);
      assert.ok((route.spec.errors as string[]).includes(kind.code), `${routeKey(route)} does not document ${kind.code}`);
    }
  }
  assert.ok(targets.length >= 12, `only ${targets.length} routes take an id`);
});

for (const route of targets) {
  for (const input of idInputs(route)) {
    test(`${routeKey(route)}: another account's ${input.name} (${input.where}) answers like a missing one, and changes nothing`, async () => {
      const valid = await validRequestFor(route, owner);
      const kind = ID_KINDS[input.name]!;
      const key = routeKey(route);
      const body = ATTACK_BODIES[key] ?? valid.body;
      const token = credentialFor(route, stranger);
      let foreignId: string;
      let send: (id: string) => Promise<JsonResponse>;
      if (input.where === 'path') {
        const groups = pathRegex(route).exec(valid.path)?.groups;
        assert.ok(groups, `${valid.path} does not match ${route.spec.path}`);
        foreignId = decodeURIComponent(groups[input.name]!);
        const query = valid.path.includes('?') ? valid.path.slice(valid.path.indexOf('?')) : '';
        const pathWith = (id: string) =>
          route.spec.path.replace(/:(\w+)/g, (_, name: string) => (name === input.name ? encodeURIComponent(id) : groups[name]!)) + query;
        send = (id) => call(stack.url, valid.method, pathWith(id), { token, body, upgrade: valid.upgrade });
      } else if (input.where === 'query') {
        // The path's own ids are the stranger's, so that only the query names a foreign object.
        const own = await validRequestFor(route, strangerSpace);
        foreignId = await owner.sandboxId();
        const sep = own.path.includes('?') ? '&' : '?';
        send = (id) => call(stack.url, own.method, `${own.path}${sep}sandboxId=${encodeURIComponent(id)}`, { token, body: own.body });
      } else {
        foreignId = await owner.sandboxId();
        send = (id) => call(stack.url, valid.method, valid.path, { token, body: { ...(body as object), sandboxId: id } });
      }
      await assertLikeMissing(key, send, foreignId, kind.missing, kind.code);
    });
  }
}

test("after every foreign attempt the owner's objects are as they were, and still the owner's", async () => {
  const id = await owner.sandboxId();
  const sandbox = await call(stack.url, 'GET', `/v1/sandboxes/${id}`, { token: ownerAccount.key });
  assert.equal(sandbox.body.state, 'active');
  const notes = await call(stack.url, 'GET', `/v1/sandboxes/${id}/files?path=notes.txt`, { token: ownerAccount.key });
  assert.equal(notes.body.content, NOTES);
  // The key and the sandbox the stranger tried to revoke and destroy.
  assert.equal((await call(stack.url, 'GET', `/v1/sandboxes/${await owner.victimSandboxId()}`, { token: ownerAccount.key })).body.state, 'active');
  const keys = await call(stack.url, 'GET', '/v1/api-keys', { token: ownerAccount.token });
  assert.ok(keys.body.data.some((k: { id: string }) => k.id === ownerAccount.keyId));
  assert.equal((await call(stack.url, 'GET', '/v1/account', { token: ownerAccount.key })).status, 200);
  // No secret was planted in the owner's sandbox, and the owner's secret is still there.
  const secrets = await call(stack.url, 'GET', `/v1/secrets?sandboxId=${id}`, { token: ownerAccount.key });
  assert.equal(secrets.status, 200);
  assert.ok(!secrets.body.data.some((s: { name: string }) => s.name === 'PLANTED'));
  const exec = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: ownerAccount.key, body: { command: 'cat /workspace/notes.txt' } });
  assert.equal(exec.body.stdout, NOTES);
});

test("lists never show another account's objects", async () => {
  await owner.sandboxId();
  await owner.secretName('OWNER_ONLY');
  const sandboxes = await call(stack.url, 'GET', '/v1/sandboxes?state=all', { token: stranger.key });
  const keys = await call(stack.url, 'GET', '/v1/api-keys', { token: stranger.token });
  const secrets = await call(stack.url, 'GET', '/v1/secrets', { token: stranger.key });
  const account = await call(stack.url, 'GET', '/v1/account', { token: stranger.key });
  const all = JSON.stringify([sandboxes.body, keys.body, secrets.body, account.body]);
  assert.ok(!all.includes(ownerAccount.id), 'the owner account id');
  assert.ok(!all.includes(ownerAccount.email), 'the owner email');
  assert.ok(!all.includes(ownerAccount.keyId), 'the owner key id');
  assert.ok(!all.includes(await owner.sandboxId()), 'the owner sandbox');
  assert.ok(!all.includes('OWNER_ONLY'), 'the owner secret');
  assert.deepEqual(keys.body.data.map((k: { id: string }) => k.id), [stranger.keyId]);
});

test('an id in another form of the same object (upper case, padded, encoded) is no way around it', async () => {
  const id = await owner.sandboxId();
  for (const variant of [id.toUpperCase(), ` ${id}`, `${id} `, `${id}%00`, encodeURIComponent(`${id}/`), `${id}.`, `${id};`]) {
    const res = await call(stack.url, 'GET', `/v1/sandboxes/${variant}`, { token: stranger.key });
    assert.ok(res.status === 404, `${variant}: ${res.status}`);
    assert.ok(['sandbox_not_found', 'not_found'].includes(res.body.code), `${variant}: ${res.body.code}`);
  }
});
