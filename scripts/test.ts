// `npm test`: type-check, lint, then the whole suite against real PostgreSQL, Redis and
// bubblewrap. Files that reach a sandbox runtime run once per runtime (local, then kubernetes
// against the API stand-in); the others run once (scripts/test-plan.ts says which). The lifecycle
// and quota suites run again through two `web` and two `worker` processes. Every file is a job of
// its own, run PADDOCK_TEST_CONCURRENCY at a time, the slowest known first (test/timings.json);
// each job's output is printed whole when it ends, and the slowest ten files at the very end.
// `npm test -- test/api/auth.test.ts` runs only the named files (PADDOCK_TEST_DEPLOYMENT=replicas
// runs suites that support it through the replicas); PADDOCK_TEST_RUNTIMES=local runs one runtime only.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { BROKERED_CLIENT_PACKAGES, BROWSER_PACKAGES, ensureDebianPackages, PYTHON_SDK_PACKAGES, startServices } from './services.ts';
import { findTestFiles, planTests } from './test-plan.ts';
import { migrateDatabase } from '../migrations/migrate.ts';
import { TEST_SANDBOXES_CPU_WEIGHT } from '../test/helpers/config.ts';

const root = resolve(import.meta.dirname, '..');
// Every Node process of the run (test files, the processes they start, the packed CLI) keeps the
// code it compiled, TypeScript stripped included, in one cache: most import the same few hundred
// files, and compiling them again is a large part of a start (about a third of a test stack's).
const env: NodeJS.ProcessEnv = {
  ...process.env,
  PATH: `${resolve(root, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}`,
  NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? resolve(root, '.paddock/compile-cache'),
};
const named = process.argv.slice(2);
const runtimes = (process.env.PADDOCK_TEST_RUNTIMES ?? 'local,kubernetes').split(',').filter(Boolean);
/** The suites that run a second time through the replicas harness (test/helpers/deployment.ts). */
const THROUGH_REPLICAS = ['test/sandboxes/lifecycle.test.ts', 'test/sandboxes/quotas.test.ts'];
/** Jobs at once: most wait on sandboxes, sockets and timers, not on a core. */
const CONCURRENCY = Number(process.env.PADDOCK_TEST_CONCURRENCY) || Math.max(2, availableParallelism() * 2);
/** A job's output kept for printing when it ends; past this, its start is dropped. */
const OUTPUT_KEPT_BYTES = 4 * 1024 * 1024;
/**
 * A file still running past this is killed, its process group whole, and counted as failed: one
 * that hangs (a teardown waiting on what never ends) must not hold the run until CI's own limit.
 */
const FILE_DEADLINE_SECONDS = Number(process.env.PADDOCK_TEST_FILE_DEADLINE_SECONDS) || 900;
/** Seconds a file took in an earlier whole run, to start the slowest first; unknown files go first. */
const TIMINGS_FILE = resolve(root, 'test/timings.json');

interface Job {
  /** The run it belongs to, e.g. `local`, `kubernetes`, `replicas, local`. */
  run: string;
  /** The test file, or the name of a step (typecheck, lint). */
  name: string;
  cmd: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Where its reporters write (test files only). */
  failures?: string;
  summaries?: string;
}

interface Ended {
  job: Job;
  code: number;
  seconds: number;
}

const scratch = mkdtempSync(join(tmpdir(), 'paddock-test-'));
const children = new Set<ChildProcess>();

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // ended already
  }
}

function runJob(job: Job, onOutput?: (text: string) => void): Promise<Ended> {
  const started = performance.now();
  return new Promise((done) => {
    // A group of its own: what the file started (web and worker processes, sandboxes) ends with it.
    const child = spawn(job.cmd, job.args, { cwd: root, env: job.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    children.add(child);
    let overran = '';
    const watchdog = job.failures
      ? setTimeout(() => {
          overran = `\n=== killed: still running after ${FILE_DEADLINE_SECONDS} s (PADDOCK_TEST_FILE_DEADLINE_SECONDS)\n`;
          killGroup(child, 'SIGTERM');
          setTimeout(() => killGroup(child, 'SIGKILL'), 15_000).unref();
        }, FILE_DEADLINE_SECONDS * 1000)
      : undefined;
    const kept: Buffer[] = [];
    let keptBytes = 0;
    const keep = (chunk: Buffer) => {
      if (onOutput) return onOutput(chunk.toString());
      kept.push(chunk);
      keptBytes += chunk.length;
      while (keptBytes > OUTPUT_KEPT_BYTES && kept.length > 1) keptBytes -= kept.shift()!.length;
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('close', (code, signal) => {
      clearTimeout(watchdog);
      children.delete(child);
      const seconds = (performance.now() - started) / 1000;
      if (!onOutput) process.stdout.write(`\n=== ${job.run}: ${job.name} (${seconds.toFixed(1)} s, exit ${code ?? signal})\n${Buffer.concat(kept).toString()}${overran}`);
      done({ job, code: overran ? 1 : (code ?? 1), seconds });
    });
  });
}

/** Runs the jobs `limit` at a time, in the order given. */
async function runPool(jobs: Job[], limit: number): Promise<Ended[]> {
  const ended: Ended[] = [];
  let next = 0;
  const lane = async () => {
    while (next < jobs.length) ended.push(await runJob(jobs[next++]!));
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, lane));
  return ended;
}

function readTimings(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(TIMINGS_FILE, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

function testJob(run: string, file: string, extraEnv: NodeJS.ProcessEnv): Job {
  const id = `${run}-${file}`.replace(/[^a-z0-9]+/gi, '-');
  const failures = join(scratch, `${id}.failures`);
  const summaries = join(scratch, `${id}.summaries`);
  const reporters = [
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=./test/helpers/failures-reporter.ts', `--test-reporter-destination=${failures}`,
    '--test-reporter=./test/helpers/summary-reporter.ts', `--test-reporter-destination=${summaries}`,
  ];
  // Not --test-force-exit: it ends a file before its reporters have written (a tenth of the passes
  // went uncounted); a file that hangs meets FILE_DEADLINE_SECONDS instead.
  return { run, name: file, cmd: 'node', args: ['--test', '--test-timeout=180000', ...reporters, file], env: { ...env, ...extraEnv }, failures, summaries };
}

function readOr(path: string | undefined, fallback: string): string {
  try {
    return path ? readFileSync(path, 'utf8') : fallback;
  } catch {
    return fallback;
  }
}

/** The steps and files that failed, named again at the very end of the output. */
const failedSteps: string[] = [];
const startedAt = performance.now();
const whole = named.length === 0;

const services = await startServices({ dir: resolve(root, '.paddock/test'), database: 'paddock_test', fresh: true });
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  for (const child of children) killGroup(child, 'SIGTERM');
  await services.stop();
  rmSync(scratch, { recursive: true, force: true });
};
process.on('SIGINT', () => void stop().then(() => process.exit(130)));
process.on('SIGTERM', () => void stop().then(() => process.exit(143)));

try {
  await migrateDatabase(services.databaseUrl);
  // The sandboxes' CPU weight as every runtime of the tests sets it, for the processes they start.
  const testEnv: NodeJS.ProcessEnv = {
    DATABASE_URL: services.databaseUrl,
    REDIS_URL: services.redisUrl,
    PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT: String(TEST_SANDBOXES_CPU_WEIGHT),
  };
  const files = whole ? findTestFiles(root) : named;
  // The CLI tests run the CLI as users install it: the packed @paddock/cli, installed into a
  // temporary prefix (test/cli/cli-helpers.ts reads PADDOCK_TEST_CLI).
  if (files.some((f) => f.includes('test/cli/'))) {
    const prefix = join(scratch, 'cli');
    mkdirSync(prefix);
    const installed = await runJob({ run: 'setup', name: 'installing the packed CLI', cmd: 'node', args: ['scripts/install-cli.ts', '--prefix', prefix], env }, (text) => process.stderr.write(text));
    if (installed.code !== 0) failedSteps.push('installing the packed CLI');
    else testEnv.PADDOCK_TEST_CLI = join(prefix, 'lib/node_modules/@paddock/cli/bin/paddock.cjs');
  }

  // What some suites need of the machine, installed in one go when they are in the run: the Python
  // SDK's test builds and installs it with the system's Python and its Debian packages; the
  // brokered-egress test runs httpx, pip, npm and git in a sandbox; the previews' browser test
  // drives Debian's Chromium.
  const needed = new Set([
    ...(files.some((f) => f.includes('test/sdk-python/')) ? PYTHON_SDK_PACKAGES : []),
    ...(files.some((f) => f.endsWith('test/secrets/brokered-egress.test.ts')) ? BROKERED_CLIENT_PACKAGES : []),
    ...(files.some((f) => f.endsWith('test/previews/browser.test.ts')) ? BROWSER_PACKAGES : []),
  ]);
  if (needed.size) await ensureDebianPackages((line) => process.stderr.write(`${line}\n`), [...needed]);

  const plan = whole ? planTests(root, files) : { perRuntime: files, once: [] };
  const timings = readTimings();
  const jobs: Job[] = [];
  if (whole) {
    jobs.push({ run: 'check', name: 'typecheck (tsc)', cmd: 'tsc', args: ['-p', 'tsconfig.json', '--noEmit'], env });
    jobs.push({ run: 'check', name: 'lint (eslint)', cmd: 'eslint', args: ['.'], env });
  }
  for (const file of plan.once) jobs.push(testJob(runtimes[0] ?? 'local', file, { ...testEnv, PADDOCK_TEST_RUNTIME: runtimes[0] ?? 'local' }));
  for (const runtime of runtimes) {
    for (const file of plan.perRuntime) jobs.push(testJob(runtime, file, { ...testEnv, PADDOCK_TEST_RUNTIME: runtime }));
    // The same suites again, unchanged, through two web and two worker processes.
    if (whole) for (const file of THROUGH_REPLICAS) jobs.push(testJob(`replicas, ${runtime}`, file, { ...testEnv, PADDOCK_TEST_RUNTIME: runtime, PADDOCK_TEST_DEPLOYMENT: 'replicas' }));
  }
  const expected = (job: Job) => (job.failures ? (timings[`${job.run}: ${job.name}`] ?? timings[job.name] ?? Infinity) : Infinity);
  jobs.sort((a, b) => expected(b) - expected(a));
  process.stderr.write(`\n=== ${jobs.length} jobs, ${CONCURRENCY} at a time: ${plan.perRuntime.length} files on ${runtimes.join(' and ')}, ${plan.once.length} once\n`);

  const ended = await runPool(jobs, CONCURRENCY);

  // Totals, failures and the slowest files, by run.
  const byRun = new Map<string, { pass: number; fail: number; skipped: number; failures: string }>();
  const fileSeconds: { label: string; seconds: number }[] = [];
  for (const { job, code, seconds } of ended) {
    if (!job.failures) {
      if (code !== 0) failedSteps.push(`${job.name} (exit ${code})`);
      continue;
    }
    const run = byRun.get(job.run) ?? { pass: 0, fail: 0, skipped: 0, failures: '' };
    byRun.set(job.run, run);
    for (const line of readOr(job.summaries, '').split('\n').filter(Boolean)) {
      const { counts } = JSON.parse(line) as { counts: { passed: number; failed: number; skipped: number; cancelled: number } };
      run.pass += counts.passed;
      run.fail += counts.failed + counts.cancelled;
      run.skipped += counts.skipped;
    }
    run.failures += readOr(job.failures, `✖ ${job.name}: its run wrote no list of failures\n`);
    if (code !== 0) failedSteps.push(`${job.run}: ${job.name} (exit ${code})`);
    fileSeconds.push({ label: `${job.run}: ${job.name}`, seconds });
  }
  for (const [title, run] of byRun) {
    process.stderr.write(`\n=== ${title}: ${run.pass} passed, ${run.fail} failed, ${run.skipped} skipped\n`);
    if (run.failures) process.stderr.write(`=== failing tests of: ${title}\n${run.failures}`);
  }
  fileSeconds.sort((a, b) => b.seconds - a.seconds);
  process.stderr.write(`\n=== slowest ten files\n${fileSeconds.slice(0, 10).map((f) => `${f.seconds.toFixed(1).padStart(7)} s  ${f.label}`).join('\n')}\n`);
  if (whole) {
    // What this run measured, to order the next: copy it over test/timings.json to keep it.
    const measured = Object.fromEntries(fileSeconds.map((f) => [f.label, Math.round(f.seconds)]));
    writeFileSync(resolve(root, '.paddock/test-timings.json'), `${JSON.stringify(measured, null, 1)}\n`);
  }
} catch (error) {
  failedSteps.push(`the test runner itself: ${String(error)}`);
} finally {
  await stop();
}
const minutes = ((performance.now() - startedAt) / 60_000).toFixed(1);
process.stderr.write(failedSteps.length ? `\n=== npm test failed in ${minutes} min: ${failedSteps.join('; ')}\n` : `\n=== npm test passed in ${minutes} min\n`);
process.exit(failedSteps.length ? 1 : 0);
