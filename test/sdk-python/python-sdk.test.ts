import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { newAccount } from '../helpers/accounts.ts';
import { SYSTEM_PYTHON } from '../../scripts/services.ts';

// test-plan: once
// paddock-sdk as users install it: its wheel built from shared/sdk-python with hatchling, installed
// alone into a fresh venv of the Debian Python (httpx and pytest are the system's, from Debian:
// scripts/test.ts installs them), and the package's own pytest suite run from outside the source tree against a real stack.
// The SDK speaks HTTP only, so one runtime shows what it does: it runs once.

const root = resolve(import.meta.dirname, '../..');
const source = join(root, 'shared/sdk-python');
const work = mkdtempSync(join(tmpdir(), 'paddock-sdk-python-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

const pipEnv = { ...process.env, PIP_NO_INDEX: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' };

/** Runs a command to its end without blocking the event loop, which the stack in this process needs. */
async function run(cmd: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn(cmd, args, { cwd: options.cwd ?? work, env: options.env ?? pipEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((ok) => child.on('close', ok));
  return { code, output };
}

async function runOk(cmd: string, args: string[], cwd?: string): Promise<string> {
  const { code, output } = await run(cmd, args, { cwd });
  assert.equal(code, 0, `${cmd} ${args.join(' ')}:\n${output}`);
  return output;
}

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '4' } });
const venv = join(work, 'venv');
const python = join(venv, 'bin/python');

test('the wheel builds, holds the package and its py.typed, and installs alone into a fresh venv', { timeout: 60_000 }, async () => {
  await runOk(SYSTEM_PYTHON, ['-m', 'hatchling', 'build', '-t', 'wheel', '-d', join(work, 'dist')], source);
  const wheels = readdirSync(join(work, 'dist')).filter((f) => f.endsWith('.whl'));
  assert.equal(wheels.length, 1, wheels.join(', '));
  const listed = await runOk(SYSTEM_PYTHON, ['-m', 'zipfile', '-l', join(work, 'dist', wheels[0]!)]);
  for (const f of ['paddock/__init__.py', 'paddock/_types.py', 'paddock/py.typed', 'paddock/sandbox.py']) assert.match(listed, new RegExp(f.replace('.', '\\.')), f);
  assert.doesNotMatch(listed, /tests\//, 'the tests are not shipped');
  const metadata = await runOk(SYSTEM_PYTHON, ['-c', `import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); print(z.read([n for n in z.namelist() if n.endswith('METADATA')][0]).decode())`, join(work, 'dist', wheels[0]!)]);
  assert.match(metadata, /Requires-Python: >=3\.9/);
  assert.match(metadata, /Requires-Dist: httpx>=0\.23/);
  assert.match(metadata, /Requires-Dist: tomli>=1\.1; python_version < ["']3\.11["']/);
  // The venv without a pip of its own (bootstrapping one costs 15 s): the system's pip installs into it.
  await runOk(SYSTEM_PYTHON, ['-m', 'venv', '--system-site-packages', '--without-pip', venv]);
  await runOk(SYSTEM_PYTHON, ['-m', 'pip', '--python', python, 'install', '--no-deps', '--no-index', '--quiet', join(work, 'dist', wheels[0]!)]);
  const where = await runOk(python, ['-c', 'import paddock, sys; print(paddock.__file__); print(paddock.__version__)']);
  assert.ok(where.startsWith(venv), `imported from the venv, not the source tree: ${where}`);
});

test("the package's pytest suite passes against a real stack", { timeout: 180_000 }, async () => {
  const [account, other] = await Promise.all([newAccount(stack.url, 'py-sdk'), newAccount(stack.url, 'py-sdk-other')]);
  // Run from the work folder: `import paddock` finds only the installed package.
  const env = {
    ...process.env,
    PADDOCK_BASE_URL: stack.url,
    PADDOCK_API_KEY: account.key,
    PADDOCK_OTHER_API_KEY: other.key,
    HOME: work,
    XDG_CONFIG_HOME: '',
    PYTHONDONTWRITEBYTECODE: '1',
  };
  const args = ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', '--rootdir', join(source, 'tests'), join(source, 'tests')];
  const { code, output } = await run(python, args, { env });
  assert.equal(code, 0, `pytest failed:\n${output}`);
  assert.doesNotMatch(output, /skipped/, `no live test may be skipped:\n${output}`);
  assert.match(output, / passed/);
});
