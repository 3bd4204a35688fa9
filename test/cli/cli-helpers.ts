import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after } from 'node:test';
import { uniqueEmail } from '../helpers/config.ts';

export const repoRoot = resolve(import.meta.dirname, '../..');
export const PASSWORD = 'correct horse battery staple';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Written to the CLI's standard input, which is then closed (it is always closed). */
  input?: string | Buffer;
  /** Variables added to (or, when undefined, removed from) the CLI's environment. */
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
}

const homes: string[] = [];
// Registered as this module loads, at the top level: it runs once the test file's tests are done
// (an after() called inside a test would run when that test ends instead).
after(() => {
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
});

/** A folder of its own for one CLI user's config (XDG_CONFIG_HOME), removed after the file's tests. */
export function tempHome(): string {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-cli-'));
  homes.push(dir);
  return dir;
}

/** The environment the CLI runs with: no terminal, nothing of this machine's Paddock settings. */
export function cliEnv(home: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), LANG: 'C.UTF-8' };
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/**
 * The CLI as the tests run it: the installed package (PADDOCK_TEST_CLI, the bin of the packed
 * @paddock/cli that scripts/test.ts installs into a temporary prefix), else the sources.
 */
export function cliCommand(): string[] {
  const installed = process.env.PADDOCK_TEST_CLI;
  return [process.execPath, installed || join(repoRoot, 'cli/main.ts')];
}

/** Starts the CLI with ARGS as a real child process with pipes (so no TTY). */
export function spawnCli(home: string, args: string[], env: Record<string, string | undefined> = {}): ChildProcessWithoutNullStreams {
  const [node, script] = cliCommand();
  return spawn(node!, [script!, ...args], { cwd: repoRoot, env: cliEnv(home, env), stdio: 'pipe' });
}

/** Runs the CLI to its end; answers its exit code, stdout and stderr. */
export function runCli(home: string, args: string[], options: RunOptions = {}): Promise<CliResult> {
  const child = spawnCli(home, args, options.env);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(options.input ?? '');
  const timeoutMs = options.timeoutMs ?? 90_000;
  return new Promise((done, fail) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`paddock ${args.join(' ')} did not finish in ${timeoutMs} ms; stdout=${stdout} stderr=${stderr}`));
    }, timeoutMs);
    child.once('error', fail);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

/** Asserts a successful run and answers its stdout. */
export function ok(r: CliResult): string {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r.stdout;
}

/** Asserts a failed run showing the error code on stderr, and nothing on stdout. */
export function failsWith(r: CliResult, code: string, exitCode?: number): void {
  assert.notEqual(r.code, 0, `expected a failure, got exit 0\nstdout: ${r.stdout}`);
  if (exitCode !== undefined) assert.equal(r.code, exitCode, `stderr: ${r.stderr}`);
  assert.match(r.stderr, new RegExp(`^Error: .*\\[${code}\\]`, 'm'), r.stderr);
  assert.equal(r.stdout, '', `stdout should be empty on an error: ${r.stdout}`);
}

/** Parses the stdout of a --json run. */
export function json<T = any>(r: CliResult): T {
  return JSON.parse(ok(r)) as T;
}

/** One person using the CLI: a config folder of their own, signed up through `paddock signup`. */
export class CliUser {
  readonly home: string;
  readonly email: string;
  readonly baseUrl: string;
  constructor(home: string, email: string, baseUrl: string) {
    this.home = home;
    this.email = email;
    this.baseUrl = baseUrl;
  }
  run(args: string[], options: RunOptions = {}): Promise<CliResult> {
    return runCli(this.home, args, options);
  }
}

export async function signedUpUser(baseUrl: string, label = 'cli'): Promise<CliUser> {
  const home = tempHome();
  const email = uniqueEmail(label);
  ok(await runCli(home, ['signup', '--url', baseUrl, '--email', email, '--password-stdin'], { input: `${PASSWORD}\n` }));
  return new CliUser(home, email, baseUrl);
}

/** Creates a running session through the CLI; answers its id. */
export async function newSession(user: CliUser): Promise<string> {
  const id = ok(await user.run(['session', 'create'])).trim();
  assert.match(id, /^sbx_[0-9a-z]+$/);
  return id;
}
