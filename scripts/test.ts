// `npm test`: type-check, lint, then the whole suite against real PostgreSQL, Redis and
// bubblewrap, once per sandbox runtime (local, then kubernetes against the API stand-in).
// The lifecycle and quota suites then run again through two `web` and two `worker` processes.
// `npm test -- test/api/auth.test.ts` runs only the named files (PADDOCK_TEST_DEPLOYMENT=replicas
// runs suites that support it through the replicas); PADDOCK_TEST_RUNTIMES=local runs one runtime only.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { startServices } from './services.ts';
import { migrateDatabase } from '../shared/db/orm.ts';
import { TEST_SANDBOXES_CPU_WEIGHT } from '../test/helpers/config.ts';

const root = resolve(import.meta.dirname, '..');
const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${resolve(root, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}` };
const files = process.argv.slice(2);
const runtimes = (process.env.PADDOCK_TEST_RUNTIMES ?? 'local,kubernetes').split(',').filter(Boolean);
/** The suites that run a second time through the replicas harness (test/helpers/deployment.ts). */
const THROUGH_REPLICAS = ['test/sandboxes/lifecycle.test.ts', 'test/sandboxes/quotas.test.ts'];

function step(cmd: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<number> {
  process.stderr.write(`\n> ${cmd} ${args.join(' ')}\n`);
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...env, ...extraEnv }, stdio: 'inherit' });
    child.on('exit', (code, signal) => done(code ?? (signal ? 1 : 0)));
  });
}

/** The steps that failed, named again at the very end of the output. */
const failedSteps: string[] = [];
if (files.length === 0) {
  // Each step runs whatever the one before it found.
  if ((await step('tsc', ['-p', 'tsconfig.json', '--noEmit'])) !== 0) failedSteps.push('typecheck (tsc)');
  if ((await step('eslint', ['.'])) !== 0) failedSteps.push('lint (eslint)');
}

const services = await startServices({ dir: resolve(root, '.paddock/test'), database: 'paddock_test', fresh: true });
// The packed CLI's prefix and the runs' failure lists, removed once the runs are over.
const scratch = mkdtempSync(join(tmpdir(), 'paddock-test-'));
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
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
  // The CLI tests run the CLI as users install it: the packed @paddock/cli, installed into a
  // temporary prefix (test/cli/cli-helpers.ts reads PADDOCK_TEST_CLI).
  if (files.length === 0 || files.some((f) => f.includes('test/cli/'))) {
    const prefix = join(scratch, 'cli');
    mkdirSync(prefix);
    if ((await step('node', ['scripts/install-cli.ts', '--prefix', prefix])) !== 0) failedSteps.push('installing the packed CLI');
    else testEnv.PADDOCK_TEST_CLI = join(prefix, 'lib/node_modules/@paddock/cli/bin/paddock.cjs');
  }
  // Each run's failures also go to a file of their own (test/helpers/failures-reporter.ts), printed
  // again at the very end: a log read from its tail still names every failure of every run.
  const runs: { title: string; failures: string }[] = [];
  const nodeTest = (title: string, testFiles: string[], extraEnv: NodeJS.ProcessEnv) => {
    process.stderr.write(`\n=== ${title}\n`);
    const failures = join(scratch, `failures-${runs.length}.txt`);
    runs.push({ title, failures });
    const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=./test/helpers/failures-reporter.ts', `--test-reporter-destination=${failures}`];
    return step('node', ['--test', '--test-concurrency=3', '--test-timeout=180000', ...reporters, ...testFiles], { ...testEnv, ...extraEnv }).then((code) => {
      if (code !== 0) failedSteps.push(`${title} (exit ${code})`);
    });
  };
  for (const runtime of runtimes) {
    await nodeTest(`test suite, PADDOCK_TEST_RUNTIME=${runtime}`, files.length ? files : ['test/**/*.test.ts'], { PADDOCK_TEST_RUNTIME: runtime });
    if (files.length > 0) continue;
    // The same suites again, unchanged, through two web and two worker processes.
    await nodeTest(`${THROUGH_REPLICAS.join(', ')}, PADDOCK_TEST_DEPLOYMENT=replicas, PADDOCK_TEST_RUNTIME=${runtime}`, THROUGH_REPLICAS, { PADDOCK_TEST_RUNTIME: runtime, PADDOCK_TEST_DEPLOYMENT: 'replicas' });
  }
  for (const run of runs) {
    let text = '';
    try {
      text = readFileSync(run.failures, 'utf8');
    } catch {
      text = '(the run wrote no list of failures)\n';
    }
    if (text) process.stderr.write(`\n=== failing tests of: ${run.title}\n${text}`);
  }
} catch (error) {
  failedSteps.push(`the test runner itself: ${String(error)}`);
} finally {
  await stop();
}
process.stderr.write(failedSteps.length ? `\n=== npm test failed: ${failedSteps.join('; ')}\n` : '\n=== npm test passed\n');
process.exit(failedSteps.length ? 1 : 0);
