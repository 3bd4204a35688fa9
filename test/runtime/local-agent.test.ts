import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { release } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { newId } from '../../shared/ids.ts';
import { frame, FrameReader } from '../../shared/runtime/local/agent/protocol.ts';
import { createLocalRuntime } from '../../shared/runtime/local/index.ts';
import { eventually } from '../helpers/eventually.ts';
import { hostProcesses as allHostProcesses, sleepMark } from '../helpers/processes.ts';
import { run, setupLocalRuntime } from '../helpers/local-runtime.ts';

// A local sandbox's init is its agent (shared/runtime/local/agent/paddock-agent.c): commands start
// through its socket, with no nsenter and no process of Paddock's forking them. These pin that,
// what the sandbox can and cannot do to the agent, and that a timeout or a disconnect still ends
// everything a command started.

const RUNTIME_MODULE = new URL('../../shared/runtime/local/index.ts', import.meta.url).href;

interface State {
  pid: number;
  agent?: boolean;
}

const stateOf = async (dataDir: string, id: string): Promise<State> =>
  JSON.parse(await readFile(join(dataDir, 'sandboxes', id, 'state.json'), 'utf8')) as State;

/** Host processes whose command line holds `marker`, with their parents. */
function hostProcesses(marker: string): { pid: number; ppid: number; args: string }[] {
  return allHostProcesses()
    .map((p) => ({ ...p, args: p.args.join(' ') }))
    .filter((p) => p.args.includes(marker));
}

test('a command is the agent\'s child: no nsenter, nothing from the spawner, and the sandbox\'s limits and user', async (t) => {
  const { runtime, sandbox, options } = await setupLocalRuntime(t);
  const id = await sandbox();
  const state = await stateOf(options.dataDir, id);
  assert.equal(state.agent, true);
  const outcome = run(runtime, id, ['sh', '-c', `exec sleep ${sleepMark(401)}`], { timeoutMs: 20_000 });
  outcome.catch(() => undefined);
  const sleeping = await eventually('the command runs', 5000, async () => hostProcesses(`sleep ${sleepMark(401)}`)[0]);
  assert.equal(sleeping.ppid, state.pid, 'its parent is the sandbox\'s init, the agent');
  assert.equal(hostProcesses('nsenter').filter((p) => p.args.includes(`--target=${state.pid}`)).length, 0);
  // The spawner started the sandbox (launch.ts); of the command, it started nothing: its only
  // children are the sandbox's bubblewrap.
  const spawners = hostProcesses('spawner-main.ts').filter((p) => p.ppid === process.pid).map((p) => p.pid);
  const spawned = hostProcesses('').filter((p) => spawners.includes(p.ppid));
  assert.deepEqual(spawned.filter((p) => !p.args.includes(id)), [], 'the spawner ran nothing for the command');
  const status = readFileSync(`/proc/${sleeping.pid}/status`, 'utf8');
  assert.doesNotMatch(/^Uid:\s+(\d+)/m.exec(status)![1]!, /^0$/, 'not root on the host');
  assert.match(/^CapEff:\s+(\w+)/m.exec(status)![1]!, /^0+$/, 'no capabilities');
  // In the init's groups (the sandbox's limits), and in a group of its own besides.
  const cgroups = readFileSync(`/proc/${sleeping.pid}/cgroup`, 'utf8');
  const initCgroups = readFileSync(`/proc/${state.pid}/cgroup`, 'utf8');
  for (const line of initCgroups.split('\n').filter((l) => l.includes(id))) {
    const [, controllers, path] = line.split(':');
    const own = cgroups.split('\n').find((l) => l.split(':')[1] === controllers)!;
    assert.ok(own.split(':')[2]!.startsWith(path!), `${own} is inside ${line}`);
  }
  assert.ok(cgroups.split('\n').some((l) => new RegExp(`${id}/x[0-9a-f]{16}$`).test(l)), cgroups);
  // Every group the sandbox has holds its init: the v1 CPU group too, which it joins once ready.
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    const procs = `/sys/fs/cgroup/${hierarchy}/paddock/${id}/cgroup.procs`;
    if (existsSync(procs)) assert.ok(readFileSync(procs, 'utf8').split('\n').includes(String(state.pid)), `the init in ${procs}`);
  }
  assert.ok(!existsSync('/sys/fs/cgroup/cpu/paddock') || existsSync(`/sys/fs/cgroup/cpu/paddock/${id}`), 'a CPU group of its own');
  await run(runtime, id, ['pkill', 'sleep']);
  assert.equal((await outcome).signal, 'SIGTERM');
});

/** The slice the kernel's scheduler gives a task, in ns (`se.slice` of /proc/PID/sched). */
const sliceOf = (sched: string): number | undefined => {
  const found = /^se\.slice\s*:\s*(\d+)/m.exec(sched);
  return found ? Number(found[1]) : undefined;
};

// Custom slices for ordinary tasks came with EEVDF's sched_attr.sched_runtime in Linux 6.12.
const [major = 0, minor = 0] = release().split('.').map(Number);
const customSlices = major > 6 || (major === 6 && minor >= 12);

test('the agent asks for the shortest scheduling slice, so it is not last in turn on a busy host; its commands run with the default', { skip: !customSlices && `Linux ${release()} has no custom slices` }, async (t) => {
  const { runtime, sandbox, options } = await setupLocalRuntime(t);
  const id = await sandbox();
  const { pid } = await stateOf(options.dataDir, id);
  assert.equal(sliceOf(readFileSync(`/proc/${pid}/sched`, 'utf8')), 100_000, 'the agent: 0.1 ms');
  const hostDefault = sliceOf(readFileSync('/proc/self/sched', 'utf8'));
  assert.ok(hostDefault !== undefined && hostDefault > 100_000);
  const command = await run(runtime, id, ['cat', '/proc/self/sched']);
  assert.equal(sliceOf(command.stdout), hostDefault, "a command: the host's default");
});

test('the agent is closed to the sandbox: its socket, its memory and its descriptors; signals from inside do not reach it', async (t) => {
  const { runtime, sandbox, options } = await setupLocalRuntime(t);
  const id = await sandbox();
  const socket = join(options.dataDir, 'sandboxes', id, 'agent.sock');
  const info = statSync(socket);
  assert.ok(info.isSocket());
  assert.equal(info.mode & 0o777, 0o600);
  assert.equal(info.uid, 0);
  const probe = await run(runtime, id, [
    'sh',
    '-c',
    'ls -la /proc/1/fd 2>&1; cat /proc/1/maps 2>&1 | head -1; cat /proc/1/environ 2>&1; ' +
      'find / -xdev -type s 2>/dev/null; kill -KILL 1; kill -STOP 1; kill -TERM 1; echo sent',
  ]);
  assert.match(probe.stdout, /\/proc\/1\/fd.*Permission denied/);
  assert.match(probe.stdout, /\/proc\/1\/maps.*Permission denied/);
  assert.match(probe.stdout, /\/proc\/1\/environ.*Permission denied/);
  assert.doesNotMatch(probe.stdout, /agent\.sock|\.sock\b/);
  assert.match(probe.stdout, /sent\n$/);
  assert.equal((await run(runtime, id, ['echo', 'still serving'])).stdout, 'still serving\n');
  assert.equal((await runtime.get(id))?.status, 'running');
});

test('a malformed or oversized request ends that connection only; the agent goes on serving', async (t) => {
  const { runtime, sandbox, options } = await setupLocalRuntime(t);
  const id = await sandbox();
  const socket = join(options.dataDir, 'sandboxes', id, 'agent.sock');
  const exchange = (bytes: Buffer) =>
    new Promise<string[]>((resolve, reject) => {
      const reader = new FrameReader();
      const types: string[] = [];
      const client = connect(socket);
      client.on('error', reject);
      client.on('data', (chunk: Buffer) => {
        reader.push(chunk);
        for (let next = reader.next(); next; next = reader.next()) types.push(`${next.type}:${next.payload.toString('latin1')}`);
      });
      client.on('close', () => resolve(types));
      client.end(bytes);
    });
  const item = (kind: string, value: Buffer) => {
    const head = Buffer.alloc(5);
    head.write(kind, 0, 'latin1');
    head.writeUInt32LE(value.byteLength, 1);
    return Buffer.concat([head, value]);
  };
  // A NUL inside an argument, an unknown item kind, an item longer than the request, no program.
  for (const body of [
    item('a', Buffer.from('ec\0ho')),
    item('z', Buffer.from('x')),
    Buffer.concat([item('a', Buffer.from('echo')).subarray(0, 5), Buffer.from('ec')]),
    item('c', Buffer.from('/workspace')),
  ]) {
    const said = await exchange(frame('R', body));
    assert.equal(said.length, 1, JSON.stringify(said));
    assert.match(said[0]!, /^F:a (malformed request|request without a program)/);
  }
  // Larger than any request may be: refused before it is read.
  const huge = Buffer.alloc(5);
  huge.write('R', 0, 'latin1');
  huge.writeUInt32LE(64 * 1024 * 1024, 1);
  assert.match((await exchange(huge))[0]!, /^F:the request/);
  // Something other than a request first.
  assert.match((await exchange(frame('G')))[0]!, /^F:a request was expected/);
  assert.equal((await run(runtime, id, ['echo', 'fine'])).stdout, 'fine\n');
});

test('commands timing out together are killed through their own groups, double forks too; the runtime holds one descriptor each', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t, { pidsMax: 512 });
  const id = await sandbox();
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, readdirSync('/proc/self/fd').length)), 2);
  const before = readdirSync('/proc/self/fd').length;
  const results = await Promise.all(
    Array.from({ length: 40 }, () => run(runtime, id, ['sh', '-c', '(setsid sleep 402 &); sleep 402'], { timeoutMs: 1500 })),
  ).finally(() => clearInterval(sampler));
  assert.equal(results.filter((r) => r.timedOut && r.signal === 'SIGKILL').length, 40);
  const left = await run(runtime, id, ['sh', '-c', 'ps -eo args | grep -c "^sleep 402" || true']);
  assert.equal(left.stdout.trim(), '0', 'every process of the timed-out commands was killed, the setsid ones too');
  // No scan of the host's process table per kill: a command holds its socket, and at most two
  // reads of its group's cgroup.procs at once (the stop's re-kill chain, and the kill the answer
  // makes once the exit is told, which overlap on a loaded host; seen at 112 and 119 here).
  assert.ok(peak - before <= 40 * 3 + 20, `the runtime's process held up to ${peak - before} more descriptors`);
});

test('a process that dies mid-command takes its command\'s session with it: the agent sees the connection close', async (t) => {
  const { options, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const script = `
    import { createLocalRuntime } from ${JSON.stringify(RUNTIME_MODULE)};
    const runtime = createLocalRuntime(${JSON.stringify(options)});
    await runtime.exec(${JSON.stringify(id)}, { argv: ['sh', '-c', 'sleep ${sleepMark(403)} & sleep ${sleepMark(404)}'], timeoutMs: 60_000 });
  `;
  const other = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
  await eventually('the command runs', 10_000, async () => (hostProcesses(`sleep ${sleepMark(404)}`).length > 0 ? true : undefined));
  other.kill('SIGKILL');
  await eventually('its command is killed', 10_000, async () =>
    hostProcesses(`sleep ${sleepMark(403)}`).length + hostProcesses(`sleep ${sleepMark(404)}`).length === 0 ? true : undefined,
  );
});

test('a sandbox made without the agent still runs commands (through nsenter) beside one with it', async (t) => {
  const { runtime, options } = await setupLocalRuntime(t);
  const older = createLocalRuntime({ ...options, agent: false });
  t.after(() => older.close());
  const id = newId('sbx');
  await older.create({ id, accountId: 'acct_test', capSeconds: 600 });
  assert.equal((await stateOf(options.dataDir, id)).agent, undefined);
  assert.equal((await run(runtime, id, ['echo', 'through nsenter'])).stdout, 'through nsenter\n');
  assert.equal((await run(older, id, ['echo', 'still'])).stdout, 'still\n');
});

test('many commands at once in one sandbox each get their own output, whole', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t, { pidsMax: 512 });
  const id = await sandbox();
  const results = await Promise.all(
    // Sixty at once on a loaded two-core host can pass the helper's 10 s default: a command stopped
    // by its deadline has the rest of its output dropped, which is not what this pins.
    Array.from({ length: 60 }, (_, i) => run(runtime, id, ['sh', '-c', `head -c ${100_000 + i} /dev/zero | tr '\\0' ${String.fromCharCode(97 + (i % 26))}; echo err${i} >&2; exit ${i % 7}`], { timeoutMs: 120_000 })),
  );
  results.forEach((result, i) => {
    assert.equal(result.timedOut, false, `command ${i} reached its deadline`);
    assert.equal(result.exitCode, i % 7);
    assert.equal(result.stdout, String.fromCharCode(97 + (i % 26)).repeat(100_000 + i));
    assert.equal(result.stderr, `err${i}\n`);
  });
});

test('a timeout that comes before the agent has even started the command still ends everything it starts', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t, { pidsMax: 512 });
  const id = await sandbox();
  const started = Date.now();
  const results = await Promise.all(
    Array.from({ length: 20 }, () => run(runtime, id, ['sh', '-c', '(setsid sleep 405 &); sleep 405'], { timeoutMs: 1 })),
  );
  assert.equal(results.filter((r) => r.timedOut).length, 20);
  assert.ok(Date.now() - started < 30_000, 'answered long before the commands would have ended');
  const left = await run(runtime, id, ['sh', '-c', 'ps -eo args | grep -c "^sleep 405" || true']);
  assert.equal(left.stdout.trim(), '0', 'nothing of the timed-out commands runs on');
});

test('the sandbox ends itself at its cap plus the grace, and follows a deadline moved later or earlier; an init without the agent keeps the one it was made with', async (t) => {
  const { runtime, options } = await setupLocalRuntime(t, { deadlineGraceSeconds: 1 });
  // A cap of a few seconds, not one: a create on a loaded host must not outlast the deadline it sets.
  const CAP_S = 4;
  const make = async (rt = runtime) => {
    const id = newId('sbx');
    await rt.create({ id, accountId: 'acct_test', capSeconds: CAP_S });
    return id;
  };
  const endedBy = async (id: string, ms: number) => eventually(`${id} ends`, ms, async () => ((await runtime.get(id))?.status === 'failed' ? Date.now() : undefined), 50);

  // At its cap plus the grace (1 s), with nothing of Paddock's asking.
  const before = Date.now();
  const capped = await make();
  assert.ok((await endedBy(capped, 12_000)) - before >= (CAP_S + 1) * 1000, 'not before its cap and grace');

  // Moved later: it outlives the deadline it was made with, then ends at the new one.
  const later = await make();
  const laterMadeAt = Date.now();
  assert.equal(await runtime.setExpiresAt!(later, new Date(Date.now() + (CAP_S + 2) * 1000)), true);
  // Past the deadline it was made with (its cap and grace from before the create's answer).
  await delay(Math.max(0, laterMadeAt + (CAP_S + 1) * 1000 + 500 - Date.now()));
  assert.equal((await runtime.get(later))?.status, 'running', 'the first deadline no longer holds');
  assert.equal((await run(runtime, later, ['echo', 'still here'])).stdout, 'still here\n');
  await endedBy(later, 8000);

  // Moved earlier: past already, it ends at once.
  const earlier = await make();
  await runtime.setExpiresAt!(earlier, new Date(Date.now() - 60_000));
  await endedBy(earlier, 2000);

  // A shell init took its deadline on its command line: no move, and it still ends by itself.
  const shellRuntime = createLocalRuntime({ ...options, agent: false });
  t.after(() => shellRuntime.close());
  const shell = await make(shellRuntime);
  assert.equal(await shellRuntime.setExpiresAt!(shell, new Date(Date.now() + 60_000)), false);
  await endedBy(shell, 12_000);
});

test('at its deadline, what runs outside the sandbox for it ends too: its network\'s slirp4netns', { skip: process.getuid?.() !== 0 && 'network needs root' }, async (t) => {
  const { runtime, options } = await setupLocalRuntime(t, { deadlineGraceSeconds: 1 });
  const id = newId('sbx');
  // A cap a loaded host's create with network fits in (4 s did not: the init ended before it joined its CPU group).
  await runtime.create({ id, accountId: 'acct_test', capSeconds: 10, network: { egress: 'all' } });
  const { network } = JSON.parse(await readFile(join(options.dataDir, 'sandboxes', id, 'state.json'), 'utf8')) as { network?: { pid: number } };
  assert.ok(network, 'the sandbox has its network');
  assert.ok(existsSync(`/proc/${network.pid}`), 'slirp4netns runs');
  await eventually('slirp4netns ends with the sandbox', 25_000, async () => {
    const stat = existsSync(`/proc/${network.pid}/stat`) ? readFileSync(`/proc/${network.pid}/stat`, 'utf8') : '';
    return stat === '' || / Z /.test(stat) ? true : undefined;
  }, 50);
  assert.equal((await runtime.get(id))?.status, 'failed');
});
