import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { readStat } from '../../shared/runtime/local/processes.ts';
import { CommandSpawner, HostCommandError, SpawnerGoneError, type HostCommand } from '../../shared/runtime/local/spawner.ts';
import { attachDisk } from '../../shared/runtime/local/disk.ts';
import { sandboxArgs, systemDirArgs } from '../../shared/runtime/local/bwrap-args.ts';
import { hostUidFor, runningAsRoot } from '../../shared/runtime/local/identity.ts';
import { sandboxMarker, type LaunchRequest } from '../../shared/runtime/local/launch.ts';
import { findPrograms } from '../../shared/runtime/local/programs.ts';
import { PermanentRuntimeError } from '../../shared/runtime/types.ts';
import { eventually } from '../helpers/eventually.ts';
import { hostProcesses, sleepMark } from '../helpers/processes.ts';
import { run, setupLocalRuntime } from '../helpers/local-runtime.ts';

// Without its agent (a sandbox made before it, a host without a C compiler, terminals always), the
// local runtime forks its commands from a small spawner process (shared/runtime/local/spawner.ts),
// not from the process that asked: these pin where commands come from and what happens when
// either process goes away.

const RUNTIME_MODULE = new URL('../../shared/runtime/local/index.ts', import.meta.url).href;

/** The spawner processes whose parent is `parent`. */
async function spawnersOf(parent: number): Promise<number[]> {
  return hostProcesses().filter((p) => p.ppid === parent && p.args.some((a) => a.endsWith('spawner-main.ts'))).map((p) => p.pid);
}

/** Host processes running `sleep <marker>`, wherever they are. */
async function sleepers(marker: string): Promise<number[]> {
  return hostProcesses().filter((p) => p.args[0]?.endsWith('sleep') && p.args[1] === marker).map((p) => p.pid);
}

/** Waits until `check` holds, for at most `ms`. */
const until = (what: string, check: () => Promise<boolean>, ms = 5000) =>
  eventually(what, ms, async () => ((await check()) ? true : undefined), 50);

/** Starts `sleep <marker>` in the sandbox; resolves once it runs, with the exec's own promise (boxed: an async function would await it). */
async function startSleeping(runtime: Parameters<typeof run>[0], id: string, marker: string) {
  const outcome = run(runtime, id, ['sh', '-c', `sleep ${marker} & echo started; wait`], { timeoutMs: 60_000 });
  outcome.catch(() => undefined); // awaited by the test; a rejection before then is not unhandled
  await until('the command runs', async () => (await sleepers(marker)).length > 0);
  return { outcome };
}

test('commands are forked by one long-lived spawner, a child of the runtime\'s process, not by it', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t, { agent: false });
  const id = await sandbox();
  assert.equal((await run(runtime, id, ['echo', 'one'])).stdout, 'one\n');
  const spawners = await spawnersOf(process.pid);
  assert.equal(spawners.length, 1, `spawners: ${spawners.join(', ')}`);
  // It holds none of this process's environment (in the API: its secrets).
  const environ = (await readFile(`/proc/${spawners[0]}/environ`, 'utf8')).split('\0').filter(Boolean);
  const names = environ.map((e) => e.slice(0, e.indexOf('='))).filter((n) => !n.startsWith('NODE_CHANNEL_')); // Node's IPC
  assert.deepEqual(names, ['PATH']);

  const { outcome } = await startSleeping(runtime, id, sleepMark(301));
  // The command's session leader (nsenter) is the spawner's child.
  const all = hostProcesses();
  const leaders = all.filter((p) => p.ppid === spawners[0] && p.args.some((a) => a.endsWith('nsenter')));
  assert.equal(leaders.length, 1, JSON.stringify(all.filter((p) => p.ppid === spawners[0])));
  assert.equal(all.filter((p) => p.ppid === process.pid && p.args.some((a) => a.endsWith('nsenter'))).length, 0);
  await run(runtime, id, ['pkill', 'sleep']);
  await outcome;
  assert.deepEqual(await spawnersOf(process.pid), spawners, 'the same spawner serves the next command');
});

test('a spawner killed mid-command fails that call, kills the command, and the next exec starts another', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t, { agent: false });
  const id = await sandbox();
  const { outcome } = await startSleeping(runtime, id, sleepMark(302));
  const [spawner] = await spawnersOf(process.pid);
  assert.ok(spawner);
  process.kill(spawner, 'SIGKILL');
  await assert.rejects(outcome, /command spawner exited \(SIGKILL\)/);
  await until('the command is killed', async () => (await sleepers(sleepMark(302))).length === 0);

  assert.equal((await run(runtime, id, ['echo', 'again'])).stdout, 'again\n');
  const now = await spawnersOf(process.pid);
  assert.equal(now.length, 1);
  assert.notEqual(now[0], spawner);
});

test('close stops the spawner and what it runs; a later exec starts another', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t, { agent: false });
  const id = await sandbox();
  const { outcome } = await startSleeping(runtime, id, sleepMark(303));
  await runtime.close();
  await assert.rejects(outcome, /command spawner exited/);
  assert.deepEqual(await spawnersOf(process.pid), []);
  await until('the command is killed', async () => (await sleepers(sleepMark(303))).length === 0);
  assert.equal((await run(runtime, id, ['echo', 'after'])).stdout, 'after\n');
});

test('a process that ran execs exits on its own; one killed takes its spawner and commands with it', async (t) => {
  const { options, sandbox } = await setupLocalRuntime(t, { agent: false });
  const id = await sandbox();
  const elsewhere = (argv: string[]) => {
    const script = `
      import { createLocalRuntime } from ${JSON.stringify(RUNTIME_MODULE)};
      const runtime = createLocalRuntime(${JSON.stringify(options)});
      await runtime.exec(${JSON.stringify(id)}, {
        argv: ${JSON.stringify(argv)}, timeoutMs: 60_000,
        onStdout: (chunk) => process.stdout.write(chunk),
      });
    `;
    return spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  };

  // Never closes its runtime: an idle spawner must not hold it open.
  const done = elsewhere(['echo', 'from elsewhere']);
  let said = '';
  done.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
  const code = await Promise.race([
    new Promise((resolve) => done.on('exit', resolve)),
    delay(10_000).then(() => 'still running after 10 s'),
  ]);
  if (code !== 0) done.kill('SIGKILL');
  assert.equal(code, 0);
  assert.equal(said, 'from elsewhere\n');

  const killed = elsewhere(['sleep', sleepMark(304)]);
  // A fresh Node process loads the runtime first: seconds on a loaded host.
  await until('the command runs', async () => (await sleepers(sleepMark(304))).length > 0, 30_000);
  const [spawner] = await spawnersOf(killed.pid!);
  assert.ok(spawner, 'the other process has a spawner');
  killed.kill('SIGKILL');
  await until('its spawner exits', async () => readStat(spawner) === undefined || readStat(spawner)!.state === 'Z');
  await until('its command is killed', async () => (await sleepers(sleepMark(304))).length === 0);
});

test('the runtime\'s own host commands (the disk\'s truncate, mkfs.ext4, mount) come from the spawner too; a failure carries its stderr', async (t) => {
  const spawner = new CommandSpawner();
  t.after(() => spawner.close());
  await spawner.host('true', []);
  const [pid] = await spawnersOf(process.pid);
  assert.ok(pid, 'a spawner serves host commands');
  // Forking a large process copies its page tables (spawner.ts): a worker creating sandboxes forks nothing.
  await spawner.host('sh', ['-c', `[ "$PPID" = ${pid} ]`]);
  await assert.rejects(spawner.host('sh', ['-c', `[ "$PPID" = ${process.pid} ]`]), HostCommandError);
  await assert.rejects(spawner.host('sh', ['-c', 'echo "no room" >&2; exit 4']), (err: unknown) => {
    assert.ok(err instanceof HostCommandError);
    assert.equal(err.message, 'sh exited with 4');
    assert.equal(err.stderr, 'no room\n');
    assert.equal(err.exitCode, 4);
    return true;
  });
  await assert.rejects(spawner.host('no-such-command-here', []), /no-such-command-here|ENOENT/);
  // The disk's failure names what the command said.
  const dir = await mkdtemp(join(tmpdir(), 'paddock-disk-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await assert.rejects(attachDisk(spawner.host, join(dir, 'disk.img'), { megabytes: 0, inodes: 64 }, 0), (err: unknown) => {
    assert.ok(err instanceof PermanentRuntimeError);
    assert.match(err.message, /the sandbox's disk could not be made \(mkfs\.ext4: Device size reported to be zero/);
    return true;
  });
  assert.deepEqual(await spawnersOf(process.pid), [pid], 'one spawner served them all');
});

test('a spawner that dies under a host command is no permanent failure of the disk: the create\'s retry starts another', async (t) => {
  const spawner = new CommandSpawner();
  t.after(() => spawner.close());
  await spawner.host('true', []);
  const [pid] = await spawnersOf(process.pid);
  assert.ok(pid);
  const sleeping = spawner.host('sleep', [sleepMark(305)]);
  await until('the command runs', async () => (await sleepers(sleepMark(305))).length > 0);
  process.kill(pid, 'SIGKILL');
  await assert.rejects(sleeping, SpawnerGoneError);
  await until('its command is killed', async () => (await sleepers(sleepMark(305))).length === 0);
  await spawner.host('true', []);
  // mkfs.ext4 or losetup lost with their spawner: the error goes up as it is, for the job to retry.
  const dir = await mkdtemp(join(tmpdir(), 'paddock-disk-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const gone: HostCommand = async (file) => {
    if (file !== 'truncate') throw new SpawnerGoneError('the command spawner exited (SIGKILL)');
    return { stdout: '' };
  };
  await assert.rejects(attachDisk(gone, join(dir, 'disk.img'), { megabytes: 8, inodes: 64 }, 0), (err: unknown) => err instanceof SpawnerGoneError && !(err instanceof PermanentRuntimeError));
});

test('warm starts the spawner ahead of the first create, whose disk commands then use it', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  assert.deepEqual(await spawnersOf(process.pid), [], 'no spawner before');
  await runtime.warm!();
  const warmed = await spawnersOf(process.pid);
  assert.equal(warmed.length, 1);
  await sandbox();
  assert.deepEqual(await spawnersOf(process.pid), warmed, 'the create used the spawner warm started');
});

/** A start request like the runtime's, for a sandbox of this test's own, its workspace under `dir`. */
async function launchRequest(dir: string, id: string, extraArgs: string[] = []): Promise<LaunchRequest> {
  // As the runtime lays a sandbox out (layout.ts): its user passes through to its own workspace.
  await chmod(dir, 0o711);
  const workspace = join(dir, 'workspace');
  await mkdir(workspace, { mode: 0o700 });
  const hostUid = hostUidFor(id);
  if (runningAsRoot) await chown(workspace, hostUid, hostUid);
  const programs = await findPrograms();
  assert.ok(programs, 'bubblewrap and nsenter are installed');
  const args = [...sandboxArgs({ systemDirs: await systemDirArgs(), workspace }), ...extraArgs];
  return { bwrap: programs.bwrap, id, args, hostUid, logFile: join(dir, 'init.log'), deadline: Date.now() + 60_000, endsAt: Date.now() + 600_000 };
}

/** Host processes whose command line names the sandbox (its bubblewrap and its init). */
async function sandboxProcesses(id: string) {
  return hostProcesses().filter((p) => p.args.includes(sandboxMarker(id)));
}

test('a sandbox\'s bubblewrap is started by the spawner, not by the runtime\'s process, and outlives it', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const [spawner] = await spawnersOf(process.pid);
  assert.ok(spawner, 'a spawner runs');
  const found = await sandboxProcesses(id);
  const pids = new Set(found.map((p) => p.pid));
  const outermost = found.filter((p) => !pids.has(p.ppid));
  assert.deepEqual(outermost.map((p) => p.ppid), [spawner], JSON.stringify(found));
  assert.ok(outermost[0]!.args[0]!.endsWith('bwrap'));
  // Its terminals' devpts was mounted (by nsenter from the spawner too): a terminal opens.
  assert.equal((await run(runtime, id, ['sh', '-c', 'test -c /dev/pts/ptmx && echo pts'])).stdout, 'pts\n');
  // The spawner's end is not the sandbox's: it runs on until destroyed.
  process.kill(spawner, 'SIGKILL');
  await until('the spawner is gone', async () => (await spawnersOf(process.pid)).length === 0);
  assert.equal((await run(runtime, id, ['echo', 'still here'])).stdout, 'still here\n');
});

/** A spawner of the test's own, and start requests each in a new directory; all gone when the test ends. */
function launcher(t: TestContext) {
  const spawner = new CommandSpawner();
  t.after(() => spawner.close());
  const request = async (id: string, extraArgs?: string[]) => {
    const dir = await mkdtemp(join(tmpdir(), 'paddock-launch-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    return launchRequest(dir, id, extraArgs);
  };
  return { spawner, request };
}

test('a start whose runtime step fails is undone: the call rejects with that step\'s error, and nothing of the sandbox is left', async (t) => {
  const { spawner, request } = launcher(t);
  const id = `sbx_launchstep${process.pid}`;
  let held: number | undefined;
  await assert.rejects(
    spawner.launch(await request(id), async (pid) => {
      held = pid;
      // Held, not running: the init has not said it runs, and its process is there.
      assert.ok(readStat(pid), 'the held init exists');
      throw new Error('the sandbox could not join its groups');
    }),
    /^Error: the sandbox could not join its groups$/,
  );
  assert.ok(held, 'the runtime was given the held init');
  await until('the init and bubblewrap are gone', async () => (await sandboxProcesses(id)).length === 0);
});

test('bubblewrap\'s own refusal is a permanent failure that carries its words', async (t) => {
  const { spawner, request } = launcher(t);
  const id = `sbx_launchrefused${process.pid}`;
  const missing = join(tmpdir(), `no-such-directory-${process.pid}`);
  await assert.rejects(spawner.launch(await request(id, ['--ro-bind', missing, '/mnt'])), (err: unknown) => {
    assert.ok(err instanceof PermanentRuntimeError, String(err));
    assert.match(err.message, /^bubblewrap could not start the sandbox: .*no-such-directory/);
    return true;
  });
  await until('nothing of it runs', async () => (await sandboxProcesses(id)).length === 0);
});

test('a spawner killed while it holds an init fails the start, and the init is killed; the next start takes a new spawner', async (t) => {
  const { spawner, request } = launcher(t);
  const id = `sbx_launchlost${process.pid}`;
  const start = spawner.launch(await request(id), async () => {
    const [pid] = await spawnersOf(process.pid);
    process.kill(pid!, 'SIGKILL');
    await delay(60_000, undefined, { ref: false });
  });
  await assert.rejects(start, SpawnerGoneError);
  await until('the init and bubblewrap are gone', async () => (await sandboxProcesses(id)).length === 0);
  // Without a step of the runtime's, the init is not relayed: it runs once in its groups.
  const again = `sbx_launchagain${process.pid}`;
  const launched = await spawner.launch(await request(again));
  assert.ok(readStat(launched.pid), 'the second sandbox runs');
  process.kill(launched.pid, 'SIGKILL');
  await until('the second one is gone', async () => (await sandboxProcesses(again)).length === 0);
});
