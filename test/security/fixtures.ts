import assert from 'node:assert/strict';
import { allRoutes } from '../../api/routes/index.ts';
import type { Route } from '../../api/routes/route.ts';
import { call, RawBody, type JsonResponse } from '../helpers/http.ts';
import { tarOf } from '../files/tar-writer.ts';
import type { TestAccount } from '../helpers/accounts.ts';
import type { RunningApi } from '../../api/server.ts';
import { runAuthSuite, type AuthSuiteOptions } from '../helpers/auth-suite.ts';
import { uniqueEmail } from '../helpers/config.ts';

// Shared by the OWASP API Security Top 10 suites: one valid request for every route in
// api/routes/index.ts, so that each suite can sweep the whole route list. A route added to the
// list without an entry here fails `validRequestFor` (and the suites' coverage tests) at once.

export const routeKey = (route: Route) => `${route.spec.method.toUpperCase()} ${route.spec.path}`;

/** The contract's security headers (api/middleware/security-headers.ts), as every answer must carry them. */
export const SECURITY_HEADERS: Record<string, string | RegExp> = {
  'cache-control': 'no-store',
  'content-security-policy': /default-src 'none'/,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': /max-age=\d+/,
  'cross-origin-resource-policy': 'same-origin',
};

export function securityHeaderProblems(headers: Headers): string[] {
  const problems: string[] = [];
  for (const [name, expected] of Object.entries(SECURITY_HEADERS)) {
    const value = headers.get(name);
    if (value === null) problems.push(`no ${name}`);
    else if (typeof expected === 'string' ? value !== expected : !expected.test(value)) problems.push(`${name}: ${value}`);
  }
  for (const name of ['x-powered-by', 'server', 'set-cookie']) if (headers.get(name) !== null) problems.push(`${name}: ${headers.get(name)}`);
  if (!headers.get('x-request-id')) problems.push('no x-request-id');
  const acao = headers.get('access-control-allow-origin');
  if (acao !== null) problems.push(`access-control-allow-origin: ${acao}`);
  return problems;
}

export const NOTES = 'hello\nworld\n';

/** An account's resources the valid requests act on, made on first use. */
export class Workspace {
  readonly url: string;
  readonly owner: TestAccount;
  private sandbox?: Promise<string>;
  private victimSandbox?: string;
  private victimKey?: { id: string; key: string };
  private webhook?: Promise<string>;
  private process?: Promise<string>;
  private snapshot?: Promise<string>;
  private victimProcess?: Promise<string>;
  private victimWebhook?: string;

  constructor(url: string, owner: TestAccount) {
    this.url = url;
    this.owner = owner;
  }

  /** A running sandbox of the owner, holding /workspace/notes.txt. */
  sandboxId(): Promise<string> {
    this.sandbox ??= (async () => {
      const res = await call(this.url, 'POST', '/v1/sandboxes', { token: this.owner.key, body: {} });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.status, 'running', JSON.stringify(res.body));
      await this.resetNotes(res.body.id);
      return res.body.id as string;
    })();
    return this.sandbox;
  }

  async resetNotes(id?: string): Promise<void> {
    const sandbox = id ?? (await this.sandboxId());
    const res = await call(this.url, 'PUT', `/v1/sandboxes/${sandbox}/files?path=notes.txt`, { token: this.owner.key, body: { content: NOTES } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  }

  /**
   * A file of the owner's sandbox for a route that takes it away (removed, moved): written again
   * before each use. Not checked: with the sandbox_ops bucket used up, the route meets the same 429.
   */
  async scratchFile(name: string): Promise<void> {
    await call(this.url, 'PUT', `/v1/sandboxes/${await this.sandboxId()}/files?${new URLSearchParams({ path: name })}`, { token: this.owner.key, body: { content: NOTES } });
  }

  /** A background process (`cat`) in the owner's sandbox, which runs on: its output is read, its stdin written. */
  processId(): Promise<string> {
    this.process ??= this.newProcess(['cat']);
    return this.process;
  }

  /** A background process that may be stopped: the same one once stopped (stopping one that has ended is still a 204). */
  victimProcessId(): Promise<string> {
    this.victimProcess ??= this.newProcess(['sleep', '600']);
    return this.victimProcess;
  }

  private async newProcess(command: string[]): Promise<string> {
    const start = async () => call(this.url, 'POST', `/v1/sandboxes/${await this.sandboxId()}/exec`, { token: this.owner.key, body: { command, background: true } });
    let res = await start();
    // Its start outlasted its timeout (the sandbox held still by a snapshot the suite takes meanwhile, on a busy host): once more.
    if (res.status === 504) res = await start();
    // The sandbox_ops bucket is used up: any id then meets the same 429 first.
    if (res.status === 429) return 'proc_000000000000000000000000';
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return res.body.id as string;
  }

  /** A sandbox that may be destroyed: the same one until it is; running, so that no start of its own is under way meanwhile. */
  async victimSandboxId(): Promise<string> {
    if (this.victimSandbox) {
      const res = await call(this.url, 'GET', `/v1/sandboxes/${this.victimSandbox}`, { token: this.owner.key });
      if (res.body.state === 'active') return this.victimSandbox;
    }
    const res = await call(this.url, 'POST', '/v1/sandboxes', { token: this.owner.key, body: {} });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.status, 'running', JSON.stringify(res.body));
    this.victimSandbox = res.body.id as string;
    return this.victimSandbox;
  }

  /** A previewed port of the sandbox that may be revoked: previewed again on every call. */
  async victimPreviewPort(): Promise<number> {
    const port = 8999;
    const res = await call(this.url, 'POST', `/v1/sandboxes/${await this.sandboxId()}/previews`, { token: this.owner.key, body: { port } });
    // The sandbox_ops bucket is used up: the revocation meets the same 429 first.
    if (res.status === 429) return port;
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return port;
  }

  /** A ready snapshot of the owner's sandbox (its workspace holds notes.txt), read and started from. */
  snapshotId(): Promise<string> {
    this.snapshot ??= this.newSnapshot();
    return this.snapshot;
  }

  /** A snapshot that may be deleted: taken again on every call. */
  victimSnapshotId(): Promise<string> {
    return this.newSnapshot();
  }

  private async newSnapshot(): Promise<string> {
    const res = await call(this.url, 'POST', `/v1/sandboxes/${await this.sandboxId()}/snapshots`, { token: this.owner.key, body: {} });
    // The sandbox_ops bucket is used up: any id then meets the same 429 first.
    if (res.status === 429) return 'snap_000000000000000000000000';
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.id as string;
  }

  /** An API key that may be revoked: the same one until it is. */
  async victimKeyId(): Promise<string> {
    if (this.victimKey) {
      // A read in no bucket, so that checking the key takes none of the account bucket's tokens.
      const res = await call(this.url, 'GET', '/v1/sandboxes', { token: this.victimKey.key });
      if (res.status === 200) return this.victimKey.id;
    }
    const res = await call(this.url, 'POST', '/v1/api-keys', { token: this.owner.token, body: { name: 'victim' } });
    // The account bucket, shared with the revocation, is used up: any id then meets the same 429.
    if (res.status === 429 && res.body?.code === 'rate_limited') return 'key_000000000000000000000000';
    assert.equal(res.status, 201, JSON.stringify(res.body));
    this.victimKey = { id: res.body.id, key: res.body.key };
    return this.victimKey.id;
  }

  /** A webhook endpoint of the owner (never delivered to: the stack's network is offline). */
  webhookId(): Promise<string> {
    this.webhook ??= this.newWebhook('suite');
    return this.webhook;
  }

  /** A webhook endpoint that may be deleted: the same one until it is. */
  async victimWebhookId(): Promise<string> {
    if (this.victimWebhook) {
      const res = await call(this.url, 'GET', '/v1/webhooks', { token: this.owner.key });
      if ((res.body?.data ?? []).some((w: { id: string }) => w.id === this.victimWebhook)) return this.victimWebhook;
    }
    this.victimWebhook = await this.newWebhook('victim');
    return this.victimWebhook;
  }

  private async newWebhook(label: string): Promise<string> {
    const res = await call(this.url, 'POST', '/v1/webhooks', { token: this.owner.key, body: { url: `https://${label}.hooks.example/`, description: label } });
    // The account bucket, shared with the webhook routes, is used up: any id then meets the same 429.
    if (res.status === 429 && res.body?.code === 'rate_limited') return 'wh_000000000000000000000000';
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.id as string;
  }

  /** An account-wide secret of the owner (created, or replaced, on every call). */
  async secretName(name = 'SECURITY_SUITE'): Promise<string> {
    const res = await call(this.url, 'POST', '/v1/secrets', { token: this.owner.key, body: { name, value: 'suite-secret-value' } });
    // The account bucket, shared with the secret routes, is used up: they meet the same 429 first.
    if (res.status === 429 && res.body?.code === 'rate_limited') return name;
    assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body));
    return name;
  }
}

export interface ValidRequest {
  method: string;
  /** Path and query. */
  path: string;
  body?: unknown;
  /** A WebSocket route's subprotocol: the request is sent as a real upgrade (call's `upgrade`). */
  upgrade?: string;
  /** What the owner's credential answers. */
  ok: number[];
}

type Maker = (w: Workspace) => Promise<Omit<ValidRequest, 'method'>>;

const sbx = (w: Workspace, sub = '') => w.sandboxId().then((id) => `/v1/sandboxes/${id}${sub}`);

// One valid request per route: `ok` what it answers to the workspace's owner.
const VALID: Record<string, Maker> = {
  'POST /v1/auth/signup': async () => ({ path: '/v1/auth/signup', body: { email: uniqueEmail('sec'), password: 'correct horse battery staple' }, ok: [201] }),
  'POST /v1/auth/login': async (w) => ({ path: '/v1/auth/login', body: { email: w.owner.email, password: w.owner.password }, ok: [200] }),
  'POST /v1/api-keys': async () => ({ path: '/v1/api-keys', body: { name: 'suite' }, ok: [201] }),
  'GET /v1/api-keys': async () => ({ path: '/v1/api-keys', ok: [200] }),
  'DELETE /v1/api-keys/:keyId': async (w) => ({ path: `/v1/api-keys/${await w.victimKeyId()}`, ok: [204] }),
  'GET /v1/account': async () => ({ path: '/v1/account', ok: [200] }),
  'POST /v1/sandboxes': async () => ({ path: '/v1/sandboxes?wait=false', body: {}, ok: [201] }),
  'GET /v1/sandboxes': async () => ({ path: '/v1/sandboxes?state=all', ok: [200] }),
  'GET /v1/sandboxes/:id': async (w) => ({ path: await sbx(w), ok: [200] }),
  'DELETE /v1/sandboxes/:id': async (w) => ({ path: `/v1/sandboxes/${await w.victimSandboxId()}?wait=false`, ok: [200] }),
  // Well within the default cap (1800 s) of a sandbox the suite made minutes ago: it outlives the suite.
  'POST /v1/sandboxes/:id/timeout': async (w) => ({ path: await sbx(w, '/timeout'), body: { timeoutSeconds: 1500 }, ok: [200] }),
  'PATCH /v1/sandboxes/:id/network': async (w) => ({ path: await sbx(w, '/network'), body: { egress: 'none' }, ok: [200] }),
  'POST /v1/sandboxes/:id/exec': async (w) => ({ path: await sbx(w, '/exec'), body: { command: ['true'] }, ok: [200] }),
  'POST /v1/sandboxes/:id/previews': async (w) => ({ path: await sbx(w, '/previews'), body: { port: 8000 }, ok: [201] }),
  'GET /v1/sandboxes/:id/previews': async (w) => ({ path: await sbx(w, '/previews'), ok: [200] }),
  'DELETE /v1/sandboxes/:id/previews/:port': async (w) => ({ path: await sbx(w, `/previews/${await w.victimPreviewPort()}`), ok: [204] }),
  'POST /v1/sandboxes/:id/snapshots': async (w) => ({ path: await sbx(w, '/snapshots'), body: {}, ok: [201] }),
  'GET /v1/snapshots': async () => ({ path: '/v1/snapshots', ok: [200] }),
  'GET /v1/snapshots/:snapshotId': async (w) => ({ path: `/v1/snapshots/${await w.snapshotId()}`, ok: [200] }),
  'DELETE /v1/snapshots/:snapshotId': async (w) => ({ path: `/v1/snapshots/${await w.victimSnapshotId()}`, ok: [204] }),
  'GET /v1/sandboxes/:id/processes': async (w) => ({ path: await sbx(w, '/processes'), ok: [200] }),
  'GET /v1/sandboxes/:id/processes/:procId/output': async (w) => ({ path: await sbx(w, `/processes/${await w.processId()}/output`), ok: [200] }),
  'POST /v1/sandboxes/:id/processes/:procId/stdin': async (w) => ({ path: await sbx(w, `/processes/${await w.processId()}/stdin`), body: { data: 'x\n' }, ok: [204] }),
  'DELETE /v1/sandboxes/:id/processes/:procId': async (w) => ({ path: await sbx(w, `/processes/${await w.victimProcessId()}`), ok: [204] }),
  // A real upgrade, answered 101; the suite's client drops it at once, which ends the terminal.
  'GET /v1/sandboxes/:id/terminal': async (w) => ({ path: await sbx(w, '/terminal?command=true'), upgrade: 'paddock.terminal.v1', ok: [101] }),
  'POST /v1/sandboxes/:id/terminal/tickets': async (w) => ({ path: await sbx(w, '/terminal/tickets'), ok: [201] }),
  'GET /v1/sandboxes/:id/files': async (w) => ({ path: await sbx(w, '/files?path=notes.txt'), ok: [200] }),
  'PUT /v1/sandboxes/:id/files': async (w) => ({ path: await sbx(w, '/files?path=notes.txt'), body: { content: NOTES }, ok: [201] }),
  'PATCH /v1/sandboxes/:id/files': async (w) => ({ path: await sbx(w, '/files?path=notes.txt'), body: { oldText: 'hello', newText: 'hello' }, ok: [200] }),
  'GET /v1/sandboxes/:id/files/ls': async (w) => ({ path: await sbx(w, '/files/ls'), ok: [200] }),
  'GET /v1/sandboxes/:id/files/glob': async (w) => ({ path: await sbx(w, '/files/glob?pattern=*.txt'), ok: [200] }),
  'GET /v1/sandboxes/:id/files/grep': async (w) => ({ path: await sbx(w, '/files/grep?pattern=hello'), ok: [200] }),
  'GET /v1/sandboxes/:id/files/archive': async (w) => ({ path: await sbx(w, '/files/archive?path=notes.txt'), ok: [200] }),
  'PUT /v1/sandboxes/:id/files/archive': async (w) => ({
    path: await sbx(w, '/files/archive?path=unpacked'),
    body: new RawBody(tarOf([{ name: 'notes.txt', data: NOTES }]), 'application/x-tar'),
    ok: [201],
  }),
  'DELETE /v1/sandboxes/:id/files': async (w) => {
    await w.scratchFile('scratch.txt');
    return { path: await sbx(w, '/files?path=scratch.txt'), ok: [204] };
  },
  'POST /v1/sandboxes/:id/files/move': async (w) => {
    await w.scratchFile('moving.txt');
    return { path: await sbx(w, '/files/move'), body: { from: 'moving.txt', to: 'moved.txt', overwrite: true }, ok: [200] };
  },
  'POST /v1/sandboxes/:id/files/mkdir': async (w) => ({ path: await sbx(w, '/files/mkdir?path=made'), ok: [201] }),
  'GET /v1/sandboxes/:id/files/stat': async (w) => ({ path: await sbx(w, '/files/stat?path=notes.txt'), ok: [200] }),
  'GET /v1/sandboxes/:id/files/raw': async (w) => ({ path: await sbx(w, '/files/raw?path=notes.txt'), ok: [200] }),
  'PUT /v1/sandboxes/:id/files/raw': async (w) => ({
    path: await sbx(w, '/files/raw?path=raw.txt'),
    body: new RawBody(Buffer.from(NOTES), 'application/octet-stream'),
    ok: [201],
  }),
  'GET /v1/allowlist': async () => ({ path: '/v1/allowlist', ok: [200] }),
  'PUT /v1/allowlist': async () => ({ path: '/v1/allowlist', body: { commands: [] }, ok: [200] }),
  'DELETE /v1/allowlist': async () => ({ path: '/v1/allowlist', ok: [204] }),
  'POST /v1/secrets': async (w) => ({ path: '/v1/secrets', body: { name: 'SUITE_TOKEN', value: 'suite-value', sandboxId: await w.sandboxId() }, ok: [200, 201] }),
  'GET /v1/secrets': async () => ({ path: '/v1/secrets', ok: [200] }),
  'DELETE /v1/secrets/:name': async (w) => ({ path: `/v1/secrets/${await w.secretName()}`, ok: [204] }),
  'GET /v1/mcp/config': async () => ({ path: '/v1/mcp/config?target=cursor', ok: [200] }),
  'POST /v1/mcp': async () => ({ path: '/v1/mcp', body: { jsonrpc: '2.0', id: 1, method: 'ping' }, ok: [200] }),
  'GET /v1/events': async () => ({ path: '/v1/events', ok: [200] }),
  // 422 once the account holds PADDOCK_WEBHOOK_MAX_PER_ACCOUNT endpoints (suites send it repeatedly).
  'POST /v1/webhooks': async () => ({ path: '/v1/webhooks', body: { url: 'https://suite.hooks.example/' }, ok: [201, 422] }),
  'GET /v1/webhooks': async () => ({ path: '/v1/webhooks', ok: [200] }),
  'DELETE /v1/webhooks/:webhookId': async (w) => ({ path: `/v1/webhooks/${await w.victimWebhookId()}`, ok: [204] }),
  'GET /v1/webhooks/:webhookId/deliveries': async (w) => ({ path: `/v1/webhooks/${await w.webhookId()}/deliveries`, ok: [200] }),
  'POST /v1/webhooks/:webhookId/test': async (w) => ({ path: `/v1/webhooks/${await w.webhookId()}/test`, ok: [202] }),
  'POST /v1/webhooks/:webhookId/secret': async (w) => ({ path: `/v1/webhooks/${await w.webhookId()}/secret`, ok: [200] }),
};

/** A valid request for the route, as the workspace's owner would send it. */
export async function validRequestFor(route: Route, w: Workspace): Promise<ValidRequest> {
  const make = VALID[routeKey(route)];
  assert.ok(make, `no valid request for ${routeKey(route)} in test/security/fixtures.ts: add one`);
  return { method: route.spec.method.toUpperCase(), ...(await make(w)) };
}

/** The owner's credential for the route. */
export function credentialFor(route: Route, account: TestAccount): string | undefined {
  if (route.spec.auth === 'none') return undefined;
  return route.spec.auth === 'apiKey' ? account.key : account.token;
}

/** Sends the route's valid request with the owner's credential (or another account's). */
export async function sendValid(route: Route, w: Workspace, as: TestAccount = w.owner): Promise<JsonResponse> {
  const req = await validRequestFor(route, w);
  return call(w.url, req.method, req.path, { token: credentialFor(route, as), body: req.body, upgrade: req.upgrade });
}

export function routesWhere(filter: (route: Route) => boolean): Route[] {
  return allRoutes.filter(filter);
}

/** Routes whose path names a resource by id: `:id`, `:keyId`, `:name`. */
export const routesWithPathIds = () => routesWhere((r) => /:\w+/.test(r.spec.path));

/** The OpenAPI-style path parameters of a route. */
export const pathParams = (route: Route) => [...route.spec.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);

/** Each owner's Workspace on `url`, made on first use and kept for the file. */
export function workspacesOn(url: string): (owner: TestAccount) => Workspace {
  const workspaces = new Map<string, Workspace>();
  return (owner) => {
    let w = workspaces.get(owner.id);
    if (!w) workspaces.set(owner.id, (w = new Workspace(url, owner)));
    return w;
  };
}

/** The shared credential suite's `cases` on every authenticated route, each with a real target of the suite's account. */
export function sweepAuthSuite(api: RunningApi, workspaceOf: (owner: TestAccount) => Workspace, cases: AuthSuiteOptions['cases']): void {
  for (const route of routesWhere((r) => r.spec.auth !== 'none')) {
    runAuthSuite({
      api,
      method: route.spec.method.toUpperCase(),
      path: route.spec.path,
      credential: route.spec.auth === 'apiKey' ? 'apiKey' : 'dashboard',
      cases,
      makeTarget: async (_api, owner) => {
        const req = await validRequestFor(route, workspaceOf(owner));
        return { path: req.path, body: req.body, upgrade: req.upgrade };
      },
    });
  }
}
