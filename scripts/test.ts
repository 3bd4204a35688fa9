// `npm test`: type-check, lint, then the whole suite against real PostgreSQL, Redis and
// bubblewrap, once per sandbox runtime (local, then kubernetes against the API stand-in).
// The lifecycle and quota suites then run again through two `web` and two `worker` processes.
// `npm test -- test/api/auth.test.ts` runs only the named files (PADDOCK_TEST_DEPLOYMENT=replicas
// runs suites that support it through the replicas); PADDOCK_TEST_RUNTIMES=local runs one runtime only.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
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

let failed = false;
if (files.length === 0) {
  // Each step runs whatever the one before it found: `failed ||= await …` would skip them.
  const typecheck = await step('tsc', ['-p', 'tsconfig.json', '--noEmit']);
  const lint = await step('eslint', ['.']);
  failed = typecheck !== 0 || lint !== 0;
}

const services = await startServices({ dir: resolve(root, '.paddock/test'), database: 'paddock_test', fresh: true });
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await services.stop();
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
    const prefix = mkdtempSync(join(tmpdir(), 'paddock-test-cli-'));
    if ((await step('node', ['scripts/install-cli.ts', '--prefix', prefix])) !== 0) failed = true;
    else testEnv.PADDOCK_TEST_CLI = join(prefix, 'lib/node_modules/@paddock/cli/bin/paddock.cjs');
  }
  const nodeTest = ['--test', '--test-concurrency=3', '--test-timeout=180000'];
  for (const runtime of runtimes) {
    process.stderr.write(`\n=== test suite, PADDOCK_TEST_RUNTIME=${runtime}\n`);
    const code = await step('node', [...nodeTest, ...(files.length ? files : ['test/**/*.test.ts'])], { ...testEnv, PADDOCK_TEST_RUNTIME: runtime });
    failed ||= code !== 0;
    if (files.length > 0) continue;
    // The same suites again, unchanged, through two web and two worker processes.
    process.stderr.write(`\n=== ${THROUGH_REPLICAS.join(', ')}, PADDOCK_TEST_DEPLOYMENT=replicas, PADDOCK_TEST_RUNTIME=${runtime}\n`);
    const replicasCode = await step('node', [...nodeTest, ...THROUGH_REPLICAS], { ...testEnv, PADDOCK_TEST_RUNTIME: runtime, PADDOCK_TEST_DEPLOYMENT: 'replicas' });
    failed ||= replicasCode !== 0;
  }
} finally {
  await stop();
}
process.exit(failed ? 1 : 0);
