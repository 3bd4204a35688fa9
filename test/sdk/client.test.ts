import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PaddockApiError, PaddockClient } from '../../shared/sdk/index.ts';
import { startTestApi } from '../helpers/stack.ts';
import { newAccount } from '../helpers/accounts.ts';

// The SDK against a real API, for the calls the CLI does not already drive end to end: scoped
// keys, the webhook endpoints' whole life, snapshots as far as they go without a sandbox (their
// whole life is test/sdk/sandbox-handle.test.ts's); and every webhook and snapshot call honours
// its AbortSignal.
// Endpoints are only added, never delivered to (this API has no worker): nothing leaves loopback.

const api = await startTestApi();

test('a key made with scopes can do what they name and nothing else', async () => {
  const account = await newAccount(api.url, 'sdk-scopes');
  const dashboard = new PaddockClient({ baseUrl: api.url, token: account.token });
  const created = await dashboard.createApiKey({ name: 'reader', scopes: ['sandboxes:read'] });
  assert.deepEqual(created.scopes, ['sandboxes:read']);
  assert.deepEqual((await dashboard.listApiKeys()).find((k) => k.id === created.id)?.scopes, ['sandboxes:read']);
  const reader = new PaddockClient({ baseUrl: api.url, apiKey: created.key });
  assert.deepEqual(await reader.listSandboxes(), []);
  await assert.rejects(reader.setAllowlist(['ls']), (err) => err instanceof PaddockApiError && err.status === 403 && err.code === 'insufficient_scope');
  // Without scopes, every scope.
  const full = await dashboard.createApiKey({ name: 'full' });
  assert.ok(full.scopes.includes('allowlist:write') && full.scopes.includes('sandboxes:read'), JSON.stringify(full.scopes));
});

test('webhooks through the SDK: add (the secret once), list, rotate (a new secret, the old one for a while), deliveries, remove', async () => {
  const account = await newAccount(api.url, 'sdk-webhooks');
  const client = new PaddockClient({ baseUrl: api.url, apiKey: account.key });
  const created = await client.createWebhook({ url: 'https://hooks.example/paddock', events: ['sandbox.destroyed'], description: 'sdk' });
  assert.match(created.secret, /^whsec_/);
  const listed = await client.listWebhooks();
  assert.deepEqual(listed.map((w) => [w.id, w.url, w.events]), [[created.id, 'https://hooks.example/paddock', ['sandbox.destroyed']]]);
  assert.equal('secret' in listed[0]!, false, 'a listed endpoint carries no secret');
  const rotated = await client.rotateWebhookSecret(created.id);
  assert.equal(rotated.id, created.id);
  assert.match(rotated.secret, /^whsec_/);
  assert.notEqual(rotated.secret, created.secret);
  assert.ok(Date.parse(rotated.previousSecretExpiresAt) > Date.now());
  assert.deepEqual(await client.listDeliveries(created.id, { limit: 5 }), []);
  await client.deleteWebhook(created.id);
  assert.deepEqual(await client.listWebhooks(), []);
  await assert.rejects(client.rotateWebhookSecret(created.id), (err) => err instanceof PaddockApiError && err.code === 'webhook_not_found');
});

test('snapshots through the SDK with no sandbox: none listed, an unknown id is snapshot_not_found, a read-only key lists but does not delete', async () => {
  const account = await newAccount(api.url, 'sdk-snapshots');
  const client = new PaddockClient({ baseUrl: api.url, apiKey: account.key });
  assert.deepEqual(await client.listSnapshots(), []);
  assert.deepEqual(await client.snapshotPage({ limit: 5 }), { data: [], next: null });
  assert.deepEqual((await client.account()).usage.snapshotStorage.usedBytes, 0);
  const notFound = (err: unknown) => err instanceof PaddockApiError && err.status === 404 && err.code === 'snapshot_not_found';
  await assert.rejects(client.getSnapshot('snap_000000000000000000000000'), notFound);
  await assert.rejects(client.deleteSnapshot('snap_000000000000000000000000'), notFound);
  await assert.rejects(client.createSandbox({ snapshot: 'snap_000000000000000000000000', wait: false }), notFound);
  await assert.rejects(client.createSnapshot('sbx_000000000000000000000000'), (err) => err instanceof PaddockApiError && err.status === 404 && err.code === 'sandbox_not_found');
  const dashboard = new PaddockClient({ baseUrl: api.url, token: account.token });
  const reader = new PaddockClient({ baseUrl: api.url, apiKey: (await dashboard.createApiKey({ name: 'reader', scopes: ['sandboxes:read'] })).key });
  assert.deepEqual(await reader.listSnapshots(), []);
  const noScope = (err: unknown) => err instanceof PaddockApiError && err.status === 403 && err.code === 'insufficient_scope';
  await assert.rejects(reader.deleteSnapshot('snap_000000000000000000000000'), noScope);
  await assert.rejects(reader.createSnapshot('sbx_000000000000000000000000', { name: 'x' }), noScope);
});

/** A client of a server that answers every request 500 and counts them. */
async function countingServer(t: TestContext): Promise<{ client: PaddockClient; requests: () => number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    res.writeHead(500).end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.after(() => new Promise((ok) => server.close(ok)));
  const client = new PaddockClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'pdk_live_x', retries: 0 });
  return { client, requests: () => requests };
}

test('every webhook call honours an aborted signal: it rejects and sends nothing', async (t) => {
  const { client, requests } = await countingServer(t);
  const signal = AbortSignal.abort();
  const calls: [string, () => Promise<unknown>][] = [
    ['createWebhook', () => client.createWebhook({ url: 'https://hooks.example/x' }, { signal })],
    ['listWebhooks', () => client.listWebhooks({ signal })],
    ['deleteWebhook', () => client.deleteWebhook('whk_x', { signal })],
    ['testWebhook', () => client.testWebhook('whk_x', { signal })],
    ['rotateWebhookSecret', () => client.rotateWebhookSecret('whk_x', { signal })],
    ['listDeliveries', () => client.listDeliveries('whk_x', { signal })],
  ];
  for (const [name, call] of calls) await assert.rejects(call(), (err: Error) => err.name === 'AbortError', name);
  assert.equal(requests(), 0);
});

test('every snapshot call honours an aborted signal: it rejects and sends nothing', async (t) => {
  const { client, requests } = await countingServer(t);
  const signal = AbortSignal.abort();
  const calls: [string, () => Promise<unknown>][] = [
    ['createSnapshot', () => client.createSnapshot('sbx_x', { name: 'n' }, { signal })],
    ['listSnapshots', () => client.listSnapshots({ limit: 1, signal })],
    ['snapshotPage', () => client.snapshotPage({ signal })],
    ['snapshots', async () => { for await (const _ of client.snapshots({ signal })) break; }],
    ['getSnapshot', () => client.getSnapshot('snap_x', { signal })],
    ['deleteSnapshot', () => client.deleteSnapshot('snap_x', { signal })],
    ['createSandbox from a snapshot', () => client.createSandbox({ snapshot: 'snap_x' }, { signal })],
  ];
  for (const [name, call] of calls) await assert.rejects(call(), (err: Error) => err.name === 'AbortError', name);
  assert.equal(requests(), 0);
});
