import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { call, callOk, createRunningSandbox, inBatches, localRuntimeOn, percentile, unroundedPercentile, round, startStack } from './stack.ts';

const GOAL_RATIO = 1.5;
const COUNT = Number(process.env.BENCH_EXEC_COUNT ?? 200);
const WARMUP = 10;
/**
 * Execs through the API before the sequential rounds: a fresh web runs the path's code
 * unoptimised for its first hundreds of requests, a process's first seconds, not what a deployment
 * serves (docs/benchmarks.md); the floors' few lines are optimised within the rounds' own warm-up.
 */
const API_WARMUP = Number(process.env.BENCH_EXEC_WARMUP ?? 1000);
const ACCOUNTS = Number(process.env.BENCH_EXEC_ACCOUNTS ?? 50);
const LOAD_SECONDS = Number(process.env.BENCH_EXEC_SECONDS ?? 10);
const LOAD_WARMUP_SECONDS = 2;
const TRUE = { command: ['true'] };
/** The exec's floor: an exec through the whole control plane costs no more than a fresh bubblewrap. */
const FLOOR_GOAL_RATIO = 1.0;
/** Against what an exec cannot do without: an HTTP round trip to a bare server, and the raw runtime's exec. */
const HTTP_FLOOR_GOAL_RATIO = 1.25;
/** A bare node:http server in a process of its own: a POST's body read, `{}` answered. Prints its port. */
const BARE_SERVER = `
const server = require('node:http').createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"exitCode":0}'));
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();`;

/** The bare server started; its URL and its end. */
async function bareServer(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['-e', BARE_SERVER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (chunk: Buffer) => resolve(String(chunk).trim()));
    child.once('exit', () => reject(new Error('the bare server exited')));
  });
  return { url: `http://127.0.0.1:${port}`, stop: () => child.stdin!.end() };
}
// A bare isolated process: every namespace new, the host's /usr read-only, /proc and /dev of its own.
const BWRAP_TRUE = ['--unshare-all', '--die-with-parent', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib',
  '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', '/bin/true'];

/** Milliseconds from spawning `bwrap … /bin/true` to its exit (code 0). */
function rawBwrap(): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bwrap', BWRAP_TRUE, { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`bwrap … /bin/true exited ${code}`))));
  });
}

// The default caps (PADDOCK_SECRETS_MAX_PER_ACCOUNT, and PADDOCK_SECRETS_MAX_BYTES_PER_ACCOUNT, which
// counts each ciphertext's 29 bytes of overhead too): every exec gets them all in its environment,
// and its output is masked with them.
const CAPPED_SECRETS = 200;
const CAPPED_SECRET_BYTES = 2560;

// Started one after another; the listing holds those the sandbox keeps (the running ones and the
// newest ended ones).
const STARTED_PROCESSES = 64;
// A listing reads a few small files a process: it should cost about what one exec does, not one a process.
const LISTING_GOAL_RATIO = 2;

/**
 * COUNT sequential execs of `true` by an account holding secrets at the caps, after WARMUP; then
 * listings of its background processes (each record's command is masked), after STARTED_PROCESSES.
 */
async function withSecretsAtTheCaps(url: string): Promise<{ execs: number[]; listings: number[]; listed: number; starts: number[] }> {
  const key = await mintApiKey(url);
  const sandbox = await createRunningSandbox(url, key);
  await inBatches(Array.from({ length: CAPPED_SECRETS }, (_, i) => i), 10, (i) =>
    callOk(url, key, 'POST', '/v1/secrets', { name: `CAPPED_${i}`, value: randomBytes(CAPPED_SECRET_BYTES).toString('base64').slice(0, CAPPED_SECRET_BYTES) }),
  );
  const ms: number[] = [];
  for (let i = 0; i < WARMUP + COUNT; i++) {
    const answer = await callOk(url, key, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, TRUE);
    if ((answer.body as { exitCode: number }).exitCode !== 0) throw new Error(`exec answered ${JSON.stringify(answer.body)}`);
    if (i >= WARMUP) ms.push(answer.ms);
  }
  const starts: number[] = [];
  for (let i = 0; i < STARTED_PROCESSES; i++) starts.push((await callOk(url, key, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, { ...TRUE, background: true })).ms);
  const listings: number[] = [];
  let listed = 0;
  for (let i = 0; i < 10; i++) {
    const answer = await callOk(url, key, 'GET', `/v1/sandboxes/${sandbox.id}/processes`);
    listed = (answer.body as { data: unknown[] }).data.length;
    if (listed === 0) throw new Error('the listing holds no process');
    listings.push(answer.ms);
  }
  return { execs: ms, listings, listed, starts };
}

export const execBenchmark: Benchmark = {
  name: 'exec',
  summary:
    `exec of \`true\`: POST /v1/sandboxes/{id}/exec against the raw local runtime's exec in the same sandbox, ${COUNT} sequential each, ` +
    `interleaved (goal: API p50 ≤ ${GOAL_RATIO}× raw p50), and against a bare node:http POST plus the raw exec, each round (goal ≤ ${HTTP_FLOOR_GOAL_RATIO}×); then ${ACCOUNTS} accounts looping exec for ${LOAD_SECONDS} s`,
  async run(ctx) {
    const stack = await startStack(ctx, 'exec');
    const runtime = localRuntimeOn(stack.dataDir);
    const bare = await bareServer();
    try {
      const key = await mintApiKey(stack.url);
      const sandbox = await createRunningSandbox(stack.url, key);
      const api: number[] = [];
      const raw: number[] = [];
      // The runtime's own time for the command, as each side measured it: what is left of the API's
      // round trip is HTTP, credentials, the rate bucket and the reads before the command runs.
      const apiRun: number[] = [];
      const rawRun: number[] = [];
      const bwrap: number[] = [];
      /** Each round's bare POST (the API's client, the same body) plus its raw exec. */
      const httpFloor: number[] = [];
      for (let i = 0; i < API_WARMUP; i++) await callOk(stack.url, key, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, TRUE);
      for (let i = 0; i < WARMUP + COUNT; i++) {
        const answer = await callOk(stack.url, key, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, TRUE);
        if ((answer.body as { exitCode: number }).exitCode !== 0) throw new Error(`exec answered ${JSON.stringify(answer.body)}`);
        const started = performance.now();
        const result = await runtime.exec(sandbox.id, { argv: ['true'], timeoutMs: 60_000 });
        const rawMs = performance.now() - started;
        if (result.exitCode !== 0) throw new Error(`raw exec: ${JSON.stringify(result)}`);
        const bwrapMs = await rawBwrap();
        const post = await callOk(bare.url, key, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, TRUE);
        if (i < WARMUP) continue;
        httpFloor.push(post.ms + rawMs);
        bwrap.push(bwrapMs);
        api.push(answer.ms);
        raw.push(rawMs);
        apiRun.push((answer.body as { durationMs: number }).durationMs);
        rawRun.push(result.durationMs);
      }
      const { execs: withSecrets, listings, listed, starts } = await withSecretsAtTheCaps(stack.url);
      const ratio = unroundedPercentile(api, 50) / unroundedPercentile(raw, 50);
      ctx.log(`  sequential: API p50 ${percentile(api, 50)} ms, raw p50 ${percentile(raw, 50)} ms (×${ratio.toFixed(2)})`);
      ctx.log(`  the command itself, p50: ${percentile(apiRun, 50)} ms in the API, ${percentile(rawRun, 50)} ms raw`);
      const floorRatio = unroundedPercentile(api, 50) / unroundedPercentile(bwrap, 50);
      ctx.log(`  a fresh bwrap … /bin/true, p50 ${percentile(bwrap, 50)} ms: API ×${floorRatio.toFixed(2)}`);
      const httpFloorRatio = unroundedPercentile(api, 50) / unroundedPercentile(httpFloor, 50);
      ctx.log(`  a bare node:http POST plus the raw exec, p50 ${percentile(httpFloor, 50)} ms: API ×${httpFloorRatio.toFixed(2)}`);
      ctx.log(`  with ${CAPPED_SECRETS} secrets of ${CAPPED_SECRET_BYTES} bytes: API p50 ${percentile(withSecrets, 50)} ms, p99 ${percentile(withSecrets, 99)} ms`);
      const listingRatio = unroundedPercentile(listings, 50) / unroundedPercentile(withSecrets, 50);
      ctx.log(`  starting ${STARTED_PROCESSES} background processes one after another: p50 ${percentile(starts, 50)} ms`);
      ctx.log(`  listing ${listed} background processes of that account: p50 ${percentile(listings, 50)} ms (×${listingRatio.toFixed(2)} its exec of true)`);

      ctx.log(`  ${ACCOUNTS} accounts, a sandbox each…`);
      const keys = await inBatches(Array.from({ length: ACCOUNTS }), 5, () => mintApiKey(stack.url));
      const sandboxes = await inBatches(keys, 10, (k) => createRunningSandbox(stack.url, k));
      const latencies: number[] = [];
      let failed = 0;
      const statuses: Record<string, number> = {};
      const loadStart = performance.now();
      const measureFrom = loadStart + LOAD_WARMUP_SECONDS * 1000;
      const end = measureFrom + LOAD_SECONDS * 1000;
      await Promise.all(
        sandboxes.map(async (s, i) => {
          while (performance.now() < end) {
            const sent = performance.now();
            const answer = await call(stack.url, keys[i]!, 'POST', `/v1/sandboxes/${s.id}/exec`, TRUE).catch(() => undefined);
            if (sent < measureFrom) continue;
            const status = String(answer?.status ?? 'error');
            statuses[status] = (statuses[status] ?? 0) + 1;
            if (!answer || answer.status !== 200) failed++;
            else latencies.push(answer.ms);
          }
        }),
      );
      const measuredSeconds = (performance.now() - measureFrom) / 1000;
      if (failed > 0) ctx.warn(`exec under load: ${failed} failed calls (${JSON.stringify(statuses)})`);
      const rows: BenchRow[] = [
        {
          subject: 'floor: a fresh `bwrap --unshare-all … /bin/true` spawned by this process',
          figures: { n: bwrap.length, 'p50 ms': percentile(bwrap, 50), 'p99 ms': percentile(bwrap, 99), 'API / floor p50': `×${floorRatio.toFixed(2)}` },
          goal: { text: `API p50 ≤ ${FLOOR_GOAL_RATIO}× a fresh bwrap's p50`, met: floorRatio <= FLOOR_GOAL_RATIO },
          detail: { samples: bwrap.map((v) => round(v)) },
        },
        {
          subject: 'floor: a POST of the same body to a bare node:http server (a process of its own, the same client) plus the raw exec, each round',
          figures: { n: httpFloor.length, 'p50 ms': percentile(httpFloor, 50), 'p99 ms': percentile(httpFloor, 99), 'API / floor p50': `×${httpFloorRatio.toFixed(2)}` },
          goal: { text: `API p50 ≤ ${HTTP_FLOOR_GOAL_RATIO}× this floor's p50`, met: httpFloorRatio <= HTTP_FLOOR_GOAL_RATIO },
          detail: { samples: httpFloor.map((v) => round(v)) },
        },
        {
          subject: 'raw runtime.exec(true), same sandbox',
          figures: { n: raw.length, 'p50 ms': percentile(raw, 50), 'p99 ms': percentile(raw, 99) },
          detail: { samples: raw.map((v) => round(v)) },
        },
        {
          subject: 'API POST /exec true, sequential',
          figures: { n: api.length, 'p50 ms': percentile(api, 50), 'p99 ms': percentile(api, 99), 'API / raw p50': `×${ratio.toFixed(2)}` },
          goal: { text: `API p50 ≤ ${GOAL_RATIO}× raw p50`, met: ratio <= GOAL_RATIO },
          detail: { samples: api.map((v) => round(v)) },
        },
        {
          subject: `API POST /exec true, sequential, the account holding ${CAPPED_SECRETS} secrets of ${CAPPED_SECRET_BYTES} bytes`,
          figures: {
            n: withSecrets.length,
            'p50 ms': percentile(withSecrets, 50),
            'p99 ms': percentile(withSecrets, 99),
            'over no secrets, p50 ms': round(percentile(withSecrets, 50) - percentile(api, 50)),
          },
          detail: { samples: withSecrets.map((v) => round(v)) },
        },
        {
          subject: `API POST /exec background, ${STARTED_PROCESSES} one after another (each counts the running ones and prunes the ended), the same account`,
          figures: { n: starts.length, 'p50 ms': percentile(starts, 50), 'p99 ms': percentile(starts, 99) },
          detail: { samples: starts.map((v) => round(v)) },
        },
        {
          subject: `API GET /processes, ${listed} background processes listed, the same account`,
          figures: { n: listings.length, 'p50 ms': percentile(listings, 50), 'p99 ms': percentile(listings, 99), 'over an exec of true p50': `×${listingRatio.toFixed(2)}` },
          goal: { text: `p50 ≤ ${LISTING_GOAL_RATIO}× the same account's exec of true`, met: listingRatio <= LISTING_GOAL_RATIO },
          detail: { samples: listings.map((v) => round(v)) },
        },
        {
          subject: `API POST /exec true, ${ACCOUNTS} accounts in parallel, ${LOAD_SECONDS} s`,
          figures: {
            n: latencies.length,
            'p50 ms': percentile(latencies, 50),
            'p99 ms': percentile(latencies, 99),
            'execs/s': round(latencies.length / measuredSeconds),
            failed,
          },
          detail: { statuses },
        },
      ];
      return rows;
    } finally {
      bare.stop();
      await runtime.close();
      await stack.stop();
    }
  },
};
