import { setTimeout as sleep } from 'node:timers/promises';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { allRoutes } from '../../api/routes/index.ts';
import { Sandbox, Account } from '../../shared/db/entities.ts';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { anyPlanArb, EDITED_PATH, routeKey } from './plans.ts';
import { buildRequest, closeClient, documentedCodes, harvest, judge, send, undocumentedCode, type World } from './client.ts';

// Property-based fuzzing of every route in api/routes/index.ts, over real HTTP, against one whole
// stack (API, worker, runtime, PostgreSQL, Redis) with real accounts and running sandboxes.
//
//   PADDOCK_FUZZ_SEED         the seed (default below, one per runtime; printed either way, to replay a run)
//   PADDOCK_FUZZ_REQUESTS     requests per run (default 5,120: `npm test` runs the file once per
//                             runtime, each from a seed of its own, so a whole run sends 10,240
//                             different requests)
//   PADDOCK_FUZZ_CONCURRENCY  requests in flight (default 16)
//
// Each of CONCURRENCY lanes runs its own fc.assert (seed + lane) over one request per run, so a
// failure shrinks to one small request. Afterwards: the processes are alive and answer, the
// database and the runtime agree on which sandboxes exist, no account is over its quota, and
// nothing polluted Object.prototype in the API's process.

const SEED = Number(process.env.PADDOCK_FUZZ_SEED ?? 20_261_121 + (testRuntime() === 'kubernetes' ? 1_000_000 : 0));
const REQUESTS = Number(process.env.PADDOCK_FUZZ_REQUESTS ?? 5_120);
const CONCURRENCY = Number(process.env.PADDOCK_FUZZ_CONCURRENCY ?? 16);
const CONCURRENT_CAP = 4;

const logLines: string[] = [];
const stack = await startSandboxStack({
  logLines,
  overrides: {
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: String(CONCURRENT_CAP),
    PADDOCK_RATE_AUTH_PER_MIN: '1000000',
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '1000000',
    PADDOCK_RATE_ACCOUNT_PER_MIN: '1000000',
    PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: '1000000',
    PADDOCK_BODY_LIMIT_BYTES: '65536',
    PADDOCK_FILE_MAX_BYTES: '131072',
    PADDOCK_EXEC_TIMEOUT_DEFAULT_SECONDS: '3',
    PADDOCK_EXEC_TIMEOUT_MAX_SECONDS: '5',
    PADDOCK_EXEC_OUTPUT_MAX_BYTES: '4096',
    PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS: '30',
  },
});
after(closeClient);
const api = stack.apis[0]!;
const worker = stack.workers[0]!;

/** The server's warnings and errors about one request, for a failure's message. */
function logOf(requestId: string | null): string {
  if (!requestId) return '(no request id)';
  const lines = logLines.filter((l) => l.includes(requestId) && /"level":(40|50|60)/.test(l));
  return lines.length ? lines.slice(0, 3).map((l) => l.slice(0, 600)).join('\n    ') : '(nothing logged above info)';
}

async function world(): Promise<World> {
  const [A, B, C] = await Promise.all([newAccount(stack.url, 'fuzz-a'), newAccount(stack.url, 'fuzz-b'), newAccount(stack.url, 'fuzz-c')]);
  const made = await Promise.all([createSandbox(stack.url, A.key), createSandbox(stack.url, A.key), createSandbox(stack.url, B.key), createSandbox(stack.url, A.key, '?wait=false')]);
  for (const res of made) assert.equal(res.status, 201, JSON.stringify(res.body));
  const [A1, A2, B1, dead] = made.map((r) => r.body.id as string) as [string, string, string, string];
  assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${dead}`, { token: A.key })).body.state, 'destroyed');
  for (const [id, owner] of [[A1, A], [A2, A], [B1, B]] as const) {
    for (const [path, content] of [['notes.txt', 'hello\nworld\n'], [EDITED_PATH, 'hello\n']]) {
      const file = await call(stack.url, 'PUT', `/v1/sandboxes/${id}/files?path=${path}`, { token: owner.key, body: { content } });
      assert.equal(file.status, 201, JSON.stringify(file.body));
    }
  }
  const secretValue = `fuzz-planted-${Date.now().toString(36)}-value`;
  assert.equal((await call(stack.url, 'POST', '/v1/secrets', { token: A.key, body: { name: 'FUZZ_TOKEN', value: secretValue } })).status, 201);
  const spare = await call(stack.url, 'POST', '/v1/api-keys', { token: A.token, body: { name: 'revoked' } });
  assert.equal((await call(stack.url, 'DELETE', `/v1/api-keys/${spare.body.id}`, { token: A.token })).status, 204);
  const hook = async (who: TestAccount) => {
    const res = await call(stack.url, 'POST', '/v1/webhooks', { token: who.key, body: { url: 'https://fuzz.hooks.example/kept' } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.id as string;
  };
  const webhooks = { A: await hook(A), B: await hook(B) };
  const procs: Record<string, { running: string; ended: string }> = {};
  for (const [id, owner] of [[A1, A], [A2, A], [B1, B]] as const) {
    const start = async (command: string) => {
      const started = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: owner.key, body: { command, background: true } });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      return started.body.id as string;
    };
    procs[id] = { running: await start('cat > /dev/null'), ended: await start('echo fuzz') };
  }
  const config = stack.config;
  return {
    api,
    url: stack.url,
    accounts: { A, B, C },
    stable: { A1, A2, B1 },
    dead,
    secretName: 'FUZZ_TOKEN',
    revokedKey: spare.body.key,
    churn: [],
    spareKeys: [],
    webhooks,
    procs,
    spareWebhooks: [],
    planted: [
      { label: 'the JWT secret', value: config.PADDOCK_JWT_SECRET! },
      { label: 'the secrets key', value: config.PADDOCK_SECRETS_KEY! },
      { label: 'the webhook secrets key', value: config.PADDOCK_WEBHOOK_SECRETS_KEY! },
      { label: 'the database URL', value: config.DATABASE_URL },
      { label: 'the Redis URL', value: config.REDIS_URL },
      { label: 'the password', value: A.password },
      { label: "A's API key", value: A.key },
      { label: "B's API key", value: B.key },
      { label: "C's API key", value: C.key },
      { label: 'the revoked key', value: spare.body.key },
      { label: 'a secret value', value: secretValue },
    ],
    routes: new Map(allRoutes.map((r) => [routeKey(r), r])),
    documented: documentedCodes((await call(stack.url, 'GET', '/v1/openapi.json')).body),
  };
}

/** Routes that make or destroy sandboxes or run commands in them cost the most: drawn less often. */
function weightOf(route: (typeof allRoutes)[number]): number {
  if (route.spec.bucket === 'sandbox_lifecycle') return 2;
  if (route.spec.path.includes('/files')) return 2;
  if (route.spec.path.endsWith('/exec')) return 3;
  return 4;
}

test(`fuzz: ${REQUESTS} generated requests over every route, no 5xx, proper problems, consistent state afterwards`, { timeout: 900_000 }, async () => {
  const w = await world();
  console.log(`fuzz seed ${SEED} (set PADDOCK_FUZZ_SEED to replay), ${REQUESTS} requests, ${CONCURRENCY} in flight, ${allRoutes.length} routes`);
  const arbitrary = anyPlanArb(allRoutes, weightOf);
  const perLane = Math.ceil(REQUESTS / CONCURRENCY);
  let sent = 0;
  const byStatus = new Map<string, number>();
  const byRoute = new Map<string, Map<number, number>>();
  const started = Date.now();
  const undocumented = new Set<string>();
  /** Routes that answered at least once with a success, or with a refusal only their own work can make. */
  const reached = new Set<string>();

  const transient: string[] = [];
  const property = fc.asyncProperty(arbitrary, async (plan) => {
    const req = buildRequest(plan, w);
    let answer = await send(w, req);
    // A read, a PUT or a DELETE (idempotent) answered 503 or 504 (a dependency or a sandbox too slow
    // on a loaded host: a loaded CI run timed out a Redis command, a background process's signal, a
    // file's write on Kubernetes)
    // is sent again, as the problem's Retry-After asks, twice at most (a host loaded enough to time
    // one out can do it again a second later): only a third 5xx is the route's fault. How often
    // that happened is bounded below.
    for (const wait of [1000, 3000]) {
      if (!(['GET', 'PUT', 'DELETE'].includes(req.method) && (answer.status === 503 || answer.status === 504))) break;
      transient.push(`${plan.route} ${answer.status}: ${answer.text.slice(0, 200)}\n    ${logOf(answer.headers.get('x-request-id'))}`);
      await sleep(wait);
      answer = await send(w, req);
    }
    sent++;
    const cls = answer.status ? `${String(answer.status)[0]}xx` : 'none';
    byStatus.set(cls, (byStatus.get(cls) ?? 0) + 1);
    const counts = byRoute.get(plan.route) ?? new Map<number, number>();
    counts.set(answer.status, (counts.get(answer.status) ?? 0) + 1);
    byRoute.set(plan.route, counts);
    if (pastValidation(answer)) reached.add(plan.route);
    harvest(plan, req, answer, w);
    const code = undocumentedCode(plan, req, answer, w);
    if (code) undocumented.add(`${plan.route}: ${code}`);
    const problems = judge(plan, req, answer, w);
    if (problems.length) {
      throw new Error(
        `${req.method} ${req.target.slice(0, 300)} answered ${answer.status}: ${problems.join('; ')}\n` +
          `  answer: ${answer.text.slice(0, 400)}${answer.error ? `\n  error: ${answer.error}` : ''}\n  log: ${logOf(answer.headers.get('x-request-id'))}`,
      );
    }
  });
  const lanes = Array.from({ length: CONCURRENCY }, (_, lane) =>
    fc.assert(property, { seed: SEED + lane, numRuns: perLane, verbose: 0 }).then(
      () => undefined,
      (err: Error) => `lane ${lane} (seed ${SEED + lane}): ${err.message.slice(0, 4000)}\n${String((err.cause as Error | undefined)?.message ?? '').slice(0, 2000)}`,
    ),
  );
  const failures = (await Promise.all(lanes)).filter((f): f is string => f !== undefined);
  const seconds = (Date.now() - started) / 1000;
  console.log(`fuzz: ${sent} requests in ${seconds.toFixed(1)} s (${(sent / seconds).toFixed(0)}/s); by class ${JSON.stringify(Object.fromEntries(byStatus))}`);
  for (const [route, counts] of [...byRoute].sort()) {
    console.log(`  ${route.padEnd(40)} ${[...counts].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}:${n}`).join(' ')}`);
  }
  if (transient.length) console.log(`requests answered 5xx and sent again (${transient.length}):\n  ${transient.join('\n  ')}`);
  assert.deepEqual(failures, [], `\n${failures.join('\n\n')}\n\n(replay with PADDOCK_FUZZ_SEED=${SEED})`);
  assert.ok(transient.length <= 8, `${transient.length} requests answered 5xx before a retry:\n${transient.join('\n')}`);
  assert.ok(sent >= REQUESTS, `only ${sent} requests were sent`);
  // What a route answers is what the OpenAPI document says it may answer.
  assert.deepEqual([...undocumented].sort(), [], 'error codes answered that the OpenAPI document does not list for the operation');

  // Every route was reached, and each got past validation at least once.
  for (const route of allRoutes) {
    const counts = byRoute.get(routeKey(route));
    assert.ok(counts, `${routeKey(route)} was never fuzzed`);
    assert.ok(reached.has(routeKey(route)), `${routeKey(route)} never got past validation: ${JSON.stringify([...counts])}`);
  }

  await checkAfterwards(w);
});

/**
 * Refusals any route makes before its own work: credentials, scope, limits, the body's shape, the
 * sandbox's ownership. Any other answer (a success; file_not_found from a move, say) shows the
 * request got past validation into the route's work. A WebSocket route's handler answers a valid
 * plain request 426 (the fuzzer sends no upgrade): past validation all the same.
 */
const BEFORE_THE_WORK = new Set([
  'invalid_json', 'invalid_request', 'missing_credential', 'invalid_credential', 'wrong_credential_type', 'insufficient_scope', 'not_found',
  'method_not_allowed', 'not_acceptable', 'unsupported_media_type', 'payload_too_large', 'headers_too_large', 'rate_limited', 'too_many_in_flight',
  'sandbox_not_found', 'sandbox_not_running', 'idempotency_key_reused', 'idempotency_conflict',
]);

function pastValidation(answer: { status: number; text: string }): boolean {
  if (answer.status >= 200 && answer.status < 300) return true;
  if (answer.status < 400 || answer.status >= 500) return false;
  let body: { code?: unknown; jsonrpc?: unknown };
  try {
    body = JSON.parse(answer.text) as typeof body;
  } catch {
    return false;
  }
  // The MCP server's own refusal of a message (a JSON-RPC error) came from its work too.
  if (body?.jsonrpc === '2.0') return true;
  return typeof body?.code === 'string' && !BEFORE_THE_WORK.has(body.code);
}

async function checkAfterwards(w: World): Promise<void> {
  // The processes are alive and answer.
  assert.equal((await call(stack.url, 'GET', '/healthz')).status, 200);
  assert.equal((await call(stack.url, 'GET', '/readyz')).status, 200);
  const workerHealth = await fetch(`http://127.0.0.1:${worker.metricsPort}/healthz`);
  assert.equal(workerHealth.status, 200);

  // Nothing polluted the prototypes of the process the API runs in.
  assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype was polluted');
  assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);

  // Settle: no sandbox of ours is still being created or destroyed.
  const em = worker.deps.orm.em.fork();
  const ours = Object.values(w.accounts).map((a) => a.id);
  const deadline = Date.now() + 120_000;
  let rows: Sandbox[] = [];
  for (;;) {
    rows = await em.fork().find(Sandbox, { accountId: { $in: ours } });
    const moving = rows.filter((r) => r.status === 'pending' || r.status === 'terminating');
    if (moving.length === 0) break;
    assert.ok(Date.now() < deadline, `sandboxes still moving after 120 s: ${moving.map((r) => `${r.id} ${r.status}`).join(', ')}`);
    await new Promise((r) => setTimeout(r, 250));
  }

  // The database and the runtime agree: every active sandbox runs, and nothing else does.
  const active = rows.filter((r) => r.state === 'active');
  for (const row of active) assert.equal(row.status, 'running', `${row.id} is active but ${row.status}`);
  const held = await worker.deps.runtime.list();
  assert.deepEqual(
    held.map((s) => s.id).sort(),
    active.map((r) => r.id).sort(),
    'the runtime holds exactly the active sandboxes of the database',
  );
  for (const s of held) assert.equal(s.status, 'running', `${s.id} is ${s.status} in the runtime`);
  for (const id of Object.values(w.stable)) {
    const row = rows.find((r) => r.id === id);
    assert.equal(row?.state, 'active', `stable sandbox ${id} was destroyed: ${JSON.stringify(row)}`);
  }

  // No account is over its quota.
  for (const account of await em.find(Account, { id: { $in: ours } })) {
    const limit = account.concurrentSandboxesLimit ?? CONCURRENT_CAP;
    const n = active.filter((r) => r.accountId === account.id).length;
    assert.ok(n <= limit, `${account.id} has ${n} active sandboxes, over its limit of ${limit}`);
    const usage = await call(stack.url, 'GET', '/v1/account', { token: Object.values(w.accounts).find((a) => a.id === account.id)!.key });
    assert.equal(usage.status, 200);
    assert.equal(usage.body.usage.concurrentSandboxes.active, n);
    assert.ok(usage.body.usage.sandboxHours.used <= usage.body.usage.sandboxHours.limit);
  }

  // The stable sandboxes still run commands.
  const A = w.accounts.A;
  await call(stack.url, 'DELETE', '/v1/allowlist', { token: A.key });
  const echo = await call(stack.url, 'POST', `/v1/sandboxes/${w.stable.A1}/exec`, { token: A.key, body: { command: ['echo', 'still here'] } });
  assert.equal(echo.status, 200, JSON.stringify(echo.body));
  assert.equal(echo.body.stdout, 'still here\n');

  // Nothing was logged as an unexpected error.
  const errors = logLines.filter((l) => /"level":(50|60)/.test(l));
  assert.deepEqual(errors.slice(0, 5), [], `${errors.length} error log lines`);
}
