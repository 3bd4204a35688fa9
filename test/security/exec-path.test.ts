import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { hostProcesses } from '../helpers/processes.ts';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { recordedExecUrls } from '../k8s-standin/exec.ts';

// A tenant attacking the exec path through HTTP: output floods, argv and environment
// tricks against the allowlist, secrets on the host's process table, processes that fork away
// from a timeout, and environments too large for execve. Runs on both runtimes.

const OUTPUT_MAX = 64 * 1024;
const stack = await startSandboxStack({
  overrides: {
    PADDOCK_EXEC_OUTPUT_MAX_BYTES: String(OUTPUT_MAX),
    PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS: '2',
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5',
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '10000',
  },
});

function exec(account: TestAccount, sandboxId: string, body: unknown) {
  return call(stack.url, 'POST', `/v1/sandboxes/${sandboxId}/exec`, { token: account.key, body });
}

async function sh(account: TestAccount, sandboxId: string, command: string, timeoutSeconds = 20) {
  const res = await exec(account, sandboxId, { command, timeoutSeconds });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as { exitCode: number | null; signal: string | null; stdout: string; stderr: string; timedOut: boolean; stdoutTruncated: boolean };
}

async function tenant(label: string) {
  const account = await newAccount(stack.url, label);
  const created = await createSandbox(stack.url, account.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return { account, sandboxId: created.body.id as string };
}

/** Every host process's command line, as `ps -eo args` shows them to any host user. */
function hostCommandLines(): string[] {
  return hostProcesses().map((p) => p.args.join(' '));
}

// The needle's first character in brackets: the pattern then never matches the searching shell's own command line.
const countInSandbox = async (account: TestAccount, sandboxId: string, needle: string) =>
  Number(
    (
      await sh(
        account,
        sandboxId,
        `n=0; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q -- '[${needle[0]}]${needle.slice(1)}' && n=$((n+1)); done; echo $n`,
      )
    ).stdout.trim(),
  );

test('an output flood is stopped soon after its cap, flagged, and a neighbour is not held up', async () => {
  const flooder = await tenant('flooder');
  const neighbour = await tenant('neighbour');
  const started = performance.now();
  const [flood, echo] = await Promise.all([
    exec(flooder.account, flooder.sandboxId, { command: 'cat /dev/zero', timeoutSeconds: 60 }),
    sleep(200).then(() => sh(neighbour.account, neighbour.sandboxId, 'echo hi')),
  ]);
  assert.equal(flood.status, 200);
  assert.equal(flood.body.stdoutTruncated, true);
  assert.equal(flood.body.stdout.length, OUTPUT_MAX);
  assert.equal(flood.body.timedOut, false);
  assert.equal(flood.body.signal, 'SIGKILL', 'the flood was stopped, not left to its 60 s timeout');
  assert.ok(performance.now() - started < 30_000, 'stopped long before its timeout');
  assert.equal(echo.stdout, 'hi\n');
  assert.equal(await countInSandbox(flooder.account, flooder.sandboxId, 'cat /dev/zero'), 0, 'nothing of the flood runs on');
});

test('a command that prints a little past the cap still ends on its own, with its exit code', async () => {
  const { account, sandboxId } = await tenant('overrun');
  const res = await sh(account, sandboxId, `head -c ${OUTPUT_MAX + 50_000} /dev/zero; exit 7`);
  assert.equal(res.exitCode, 7);
  assert.equal(res.stdoutTruncated, true);
});

test('a streamed flood read by no one costs bounded memory, and the command stops', async () => {
  const { account, sandboxId } = await tenant('slowreader');
  const before = process.memoryUsage().rss;
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss - before)), 50);
  const url = new URL(`/v1/sandboxes/${sandboxId}/exec`, stack.url);
  const req = request(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
  });
  try {
    const status = await new Promise<number>((resolve, reject) => {
      req.on('error', reject);
      req.on('response', (res) => {
        res.pause(); // a reader that never reads
        resolve(res.statusCode ?? 0);
      });
      req.end(JSON.stringify({ command: 'yes paddock-flood-marker', timeoutSeconds: 120 }));
    });
    assert.equal(status, 200);
    // Stopped by the output cap or by the write timeout, whichever comes first: never left running
    // into a buffer that grows while no one reads.
    await eventually('the unread command is stopped', 20_000, async () =>
      (await countInSandbox(account, sandboxId, 'yes paddock-flood-marker')) === 0 ? true : undefined,
    );
  } finally {
    clearInterval(sampler);
    req.destroy();
  }
  assert.ok(peak < 64 * 1024 * 1024, `the test process (API, runtime, stand-in) grew ${peak} bytes`);
});

test('argv reaches exec as given: an element with = is a program name, never an assignment', async () => {
  const { account, sandboxId } = await tenant('argv');
  const res = await exec(account, sandboxId, { command: ['FOO=1', 'echo', 'pwned'] });
  assert.equal(res.status, 200);
  assert.equal(res.body.exitCode, 127);
  assert.doesNotMatch(res.body.stdout, /pwned/);
  const dashes = await exec(account, sandboxId, { command: ['echo', '-i', '--', 'A=B', '$(id)', '`id`', 'x\ny'] });
  assert.equal(dashes.body.stdout, '-i -- A=B $(id) `id` x\ny\n');
});

test('with an allowlist, argv and env tricks run nothing else', async () => {
  const { account, sandboxId } = await tenant('allowlisted');
  await sh(account, sandboxId, `printf '#!/bin/sh\\necho escaped\\n' > /workspace/evil; chmod +x /workspace/evil; mkdir -p /workspace/bin; cp /workspace/evil /workspace/bin/ls`);
  const put = await call(stack.url, 'PUT', '/v1/allowlist', { token: account.key, body: { commands: ['ls', 'cat', 'echo'] } });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  for (const command of [
    ['PATH=/workspace/bin', 'ls'],
    ['LD_PRELOAD=/workspace/evil', 'ls'],
    ['env', 'PATH=/workspace/bin', 'ls'],
    ['ls=1', '/workspace/evil'],
  ]) {
    const res = await exec(account, sandboxId, { command });
    if (res.status === 200) assert.doesNotMatch(res.body.stdout, /escaped/, JSON.stringify(command));
    else assertProblem(res, 403, 'command_not_allowed');
  }
  const viaEnv = await exec(account, sandboxId, { command: ['ls'], env: { PATH: '/workspace/bin' } });
  assertProblem(viaEnv, 403, 'command_not_allowed');
});

test("the sandbox's create-time env and the secrets' names are held to the protected-variable rules", async () => {
  const account = await newAccount(stack.url, 'createenv');
  // Made before any allowlist: allowed then.
  const early = await createSandbox(stack.url, account.key, '', { env: { BASH_ENV: '/workspace/evil.sh', GREETING: 'hi' } });
  assert.equal(early.status, 201, JSON.stringify(early.body));
  await sh(account, early.body.id, `printf 'echo escaped\\n' > /workspace/evil.sh`);
  assert.equal((await call(stack.url, 'PUT', '/v1/allowlist', { token: account.key, body: { commands: ['ls', 'bash'] } })).status, 200);

  const refusedCreate = await createSandbox(stack.url, account.key, '', { env: { LD_PRELOAD: '/workspace/x.so' } });
  assertProblem(refusedCreate, 403, 'command_not_allowed');
  assert.equal(refusedCreate.body.variable, 'LD_PRELOAD');

  // The early sandbox's own env now counts at every exec.
  const refusedExec = await exec(account, early.body.id, { command: ['bash', '-c', 'ls'] });
  assertProblem(refusedExec, 403, 'command_not_allowed');
  assert.equal(refusedExec.body.variable, 'BASH_ENV');

  const clean = await createSandbox(stack.url, account.key, '', { env: { GREETING: 'hi' } });
  assert.equal(clean.status, 201, JSON.stringify(clean.body));
  // A secret cannot take a protected name at all.
  const secret = await call(stack.url, 'POST', '/v1/secrets', { token: account.key, body: { name: 'LD_PRELOAD', value: '/workspace/x.so', sandboxId: clean.body.id } });
  assertProblem(secret, 400, 'invalid_request');
  assert.equal((await exec(account, clean.body.id, { command: ['ls'] })).status, 200);
});

test("secrets and env values never appear on the host's process table, and arrive byte for byte", async () => {
  const { account, sandboxId } = await tenant('secrets');
  const value = `s3cr3t-${Math.random().toString(36).slice(2)}-value`;
  assert.equal((await call(stack.url, 'POST', '/v1/secrets', { token: account.key, body: { name: 'API_TOKEN', value } })).status, 201);
  const odd = `line1\nline2 with 'quotes' "dq" \\back $(id) \`id\` $HOME\n\n`;
  const envValue = `env-${Math.random().toString(36).slice(2)}`;
  const running = exec(account, sandboxId, { command: 'sleep 3; printf %s "$ODD"; echo; printenv API_TOKEN | wc -c', env: { ODD: odd, PLAIN: envValue } });
  let seen = false;
  for (let i = 0; i < 20; i++) {
    await sleep(100);
    const lines = hostCommandLines();
    if (lines.some((l) => l.includes('sleep 3'))) seen = true;
    assert.ok(!lines.some((l) => l.includes(value)), 'the secret is on a host command line');
    assert.ok(!lines.some((l) => l.includes(envValue)), 'an env value is on a host command line');
  }
  const res = await running;
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.ok(seen, 'the command was seen running, so the check above looked while it ran');
  if (testRuntime() === 'kubernetes') {
    // What an API server's audit log would have kept of the exec requests.
    const urls = recordedExecUrls.map((u) => decodeURIComponent(u.replaceAll('+', ' ')));
    assert.ok(urls.some((u) => u.includes('paddock-exec')), 'the exec requests were recorded');
    assert.ok(!urls.some((u) => u.includes(value) || u.includes(envValue) || u.includes('line2 with')), 'a secret or env value is in an exec URL');
  }
  assert.equal(res.body.stdout, `${odd}\n${value.length + 1}\n`);
});

test('a timeout ends everything the command started, double forks and new sessions included', async () => {
  const { account, sandboxId } = await tenant('forker');
  const escapes = [
    '(setsid sleep 305 &)',
    'setsid -f sleep 306',
    'nohup sleep 307 >/dev/null 2>&1 &',
    "sh -c 'sh -c \"sleep 308\" & exit 0' &",
  ];
  const res = await sh(account, sandboxId, `${escapes.join('\n')}\nsleep 30`, 2);
  assert.equal(res.timedOut, true);
  await eventually('every escaped sleep is gone', 10_000, async () => {
    return (await countInSandbox(account, sandboxId, 'sleep 30[5-8]')) === 0 ? true : undefined;
  });
});

test('a background process of a command that ended on its own keeps running', async () => {
  const { account, sandboxId } = await tenant('daemon');
  const res = await sh(account, sandboxId, '(setsid sleep 309 &); echo started');
  assert.equal(res.exitCode, 0);
  await sleep(300);
  assert.equal(await countInSandbox(account, sandboxId, 'sleep 309'), 1);
});

test('an environment too large for execve is a 400 before anything runs, and reserved names are refused', async () => {
  const account = await newAccount(stack.url, 'bigenv');
  // Each part within its own body limit (1 MiB), together past what execve takes: the sandbox's
  // create-time env and the request's are merged before anything runs.
  const part = (prefix: string, count: number, size: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}_${i}`, 'x'.repeat(size)]));
  const created = await createSandbox(stack.url, account.key, '', { env: part('BOX', 64, 4096) });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const sandboxId = created.body.id as string;
  const big = await exec(account, sandboxId, { command: 'touch /workspace/ran', env: part('REQ', 13, 61_000) });
  assertProblem(big, 400, 'invalid_request');
  const wide = await exec(account, sandboxId, { command: 'touch /workspace/ran', env: { WIDE: '€'.repeat(60_000) } });
  assertProblem(wide, 400, 'invalid_request');
  const reserved = await exec(account, sandboxId, { command: 'touch /workspace/ran', env: { __PADDOCK_V: 'x' } });
  assertProblem(reserved, 400, 'invalid_request');
  assert.equal((await sh(account, sandboxId, 'test -e /workspace/ran; echo $?')).stdout, '1\n', 'nothing ran');
  const reservedSecret = await call(stack.url, 'POST', '/v1/secrets', { token: account.key, body: { name: '__PADDOCK_CWD', value: 'value-x' } });
  assertProblem(reservedSecret, 400, 'invalid_request');
});

test('a flood costs Paddock no process and little memory: commands start from the sandbox\'s agent (local runtime)', { skip: testRuntime() !== 'local' }, async () => {
  const { account, sandboxId } = await tenant('spawnerflood');
  // Without the agent, a spawner (spawner-main.ts) forks commands for this process. One runs for
  // the runtime's own work (a create's disk, its bubblewrap), but no command of the flood is its.
  // A spawner's children are the sandboxes it started (their bubblewrap, named by their marker,
  // launch.ts) and the commands it forks.
  const forkedBySpawners = (): number[] => {
    const processes = hostProcesses();
    const spawners = new Set(processes.filter((p) => p.ppid === process.pid && p.args.some((a) => a.includes('spawner-main.ts'))).map((p) => p.pid));
    return processes.filter((p) => spawners.has(p.ppid) && !p.args.some((a) => a.includes('paddock-sandbox-'))).map((p) => p.pid);
  };
  await sh(account, sandboxId, 'true');
  const before = process.memoryUsage().rss;
  let peak = before;
  const forked = new Set<number>();
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
    for (const child of forkedBySpawners()) forked.add(child);
  }, 20);
  try {
    const floods = await Promise.all([1, 2, 3].map(() => exec(account, sandboxId, { command: 'cat /dev/zero', timeoutSeconds: 30 })));
    for (const flood of floods) assert.equal(flood.body.stdoutTruncated, true);
  } finally {
    clearInterval(sampler);
  }
  assert.deepEqual([...forked], [], 'no command of the flood was forked by a spawner');
  // Three answers of 1 MiB of NUL, each six times that as JSON, are this process's to hold.
  assert.ok(peak - before < 96 * 1024 * 1024, `this process (the API and the test) grew ${peak - before} bytes`);
});
