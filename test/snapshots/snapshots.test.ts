import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { eventually } from '../helpers/eventually.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { fileClient, sandboxFor } from '../files/helpers.ts';
import { tarOf, type TarMember } from '../files/tar-writer.ts';
import { newId } from '../../shared/ids.ts';
import { Snapshots } from '../../shared/snapshots/snapshots.ts';
import { snapshotStore } from '../../shared/snapshots/store.ts';
import { HALT_SCRIPT, RESUME_SCRIPT } from '../../shared/snapshots/scripts.ts';
import { sweepOnce } from '../../workers/reaper.ts';
import { isStdinStream } from '../../shared/runtime/types.ts';

// Snapshots (docs/api.md, "Snapshots"): a running sandbox's workspace copied into the snapshot
// store, and sandboxes started from it. Run once per runtime (PADDOCK_TEST_RUNTIME).

const QUOTA = 2 * 1024 * 1024;
const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_SNAPSHOT_BYTES: String(QUOTA), PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '4' } });
const storeDir = join(stack.config.PADDOCK_DATA_DIR, 'snapshots');
const stored = (id: string) => join(storeDir, `${id}.tar.zst`);

const snapshot = (key: string, sandboxId: string, body: unknown = {}) => call(stack.url, 'POST', `/v1/sandboxes/${sandboxId}/snapshots`, { token: key, body });

// A tree with what a project holds: nested and empty directories, a symlink, binary data, modes, an old modification time.
const MAKE_TREE = `cd /workspace && mkdir -p src/deep empty && printf 'nested\\n' > src/deep/notes.txt &&
  head -c 70000 /dev/urandom > bin.dat && printf '#!/bin/sh\\necho run\\n' > run.sh && chmod 755 run.sh &&
  printf 'k\\n' > private.key && chmod 600 private.key && ln -s src/deep/notes.txt link-to-notes &&
  touch -d '2001-02-03 04:05:06' src/deep/notes.txt`;
const DESCRIBE_TREE = `cd /workspace && sha256sum bin.dat src/deep/notes.txt && stat -c '%n %a %F' run.sh private.key empty link-to-notes &&
  readlink link-to-notes && date -r src/deep/notes.txt -u +%Y%m%d%H%M%S && ./run.sh`;

test('a workspace round-trips through a snapshot: contents, modes, symlinks, empty directories and modification times; the copy outlives later changes', async () => {
  const account = await newAccount(stack.url, 'snapshots');
  const box = await sandboxFor(stack, account.key);
  assert.equal((await box.sh(MAKE_TREE)).exitCode, 0);
  const before = await box.sh(DESCRIBE_TREE);
  assert.equal(before.exitCode, 0, before.stderr);

  const taken = await snapshot(account.key, box.id, { name: 'after setup' });
  assert.equal(taken.status, 201, JSON.stringify(taken.body));
  assert.equal(taken.headers.get('location'), `/v1/snapshots/${taken.body.id}`);
  assert.match(taken.body.id, /^snap_[0-9a-z]{24}$/);
  assert.equal(taken.body.status, 'ready');
  assert.equal(taken.body.name, 'after setup');
  assert.equal(taken.body.sandboxId, box.id);
  assert.ok(taken.body.sizeBytes > 70_000, JSON.stringify(taken.body));
  // src, src/deep, notes, empty, bin.dat, run.sh, private.key, the link
  assert.ok(taken.body.files >= 8, JSON.stringify(taken.body));
  assert.equal(readFileSync(stored(taken.body.id)).length, taken.body.sizeBytes);

  // Changed afterwards: the snapshot keeps what was.
  assert.equal((await box.sh('rm -rf /workspace/src /workspace/bin.dat')).exitCode, 0);

  const restored = await createSandbox(stack.url, account.key, '', { snapshot: taken.body.id });
  assert.equal(restored.status, 201, JSON.stringify(restored.body));
  assert.equal(restored.body.status, 'running', JSON.stringify(restored.body));
  assert.equal(restored.body.image, taken.body.image);
  const after = await fileClient(stack, account.key, restored.body.id).sh(DESCRIBE_TREE);
  assert.equal(after.stdout, before.stdout);
  assert.match(after.stdout, /run.sh 755 regular file\nprivate.key 600 regular file\nempty 755 directory\nlink-to-notes 777 symbolic link\nsrc\/deep\/notes.txt\n20010203040506\nrun\n$/);

  // Listed, newest first, and read one by one.
  const second = await snapshot(account.key, box.id);
  assert.equal(second.status, 201, JSON.stringify(second.body));
  const listed = await call(stack.url, 'GET', '/v1/snapshots', { token: account.key });
  assert.equal(listed.status, 200);
  assert.deepEqual(listed.body.data.map((s: { id: string }) => s.id), [second.body.id, taken.body.id]);
  const paged = await call(stack.url, 'GET', '/v1/snapshots?limit=1', { token: account.key });
  assert.deepEqual([paged.body.data.length, paged.body.next], [1, second.body.id]);
  const rest = await call(stack.url, 'GET', `/v1/snapshots?limit=1&after=${paged.body.next}`, { token: account.key });
  assert.deepEqual([rest.body.data[0].id, rest.body.next], [taken.body.id, null]);
  const one = await call(stack.url, 'GET', `/v1/snapshots/${taken.body.id}`, { token: account.key });
  assert.deepEqual(one.body, taken.body);

  // Deleted: its stored copy goes too; a sandbox started from it keeps its workspace.
  assert.equal((await call(stack.url, 'DELETE', `/v1/snapshots/${taken.body.id}`, { token: account.key })).status, 204);
  assert.equal(existsSync(stored(taken.body.id)), false);
  assertProblem(await call(stack.url, 'GET', `/v1/snapshots/${taken.body.id}`, { token: account.key }), 404, 'snapshot_not_found');
  assertProblem(await createSandbox(stack.url, account.key, '', { snapshot: taken.body.id }), 404, 'snapshot_not_found');
  assert.equal((await fileClient(stack, account.key, restored.body.id).sh('cat /workspace/src/deep/notes.txt')).stdout, 'nested\n');

  const events = await call(stack.url, 'GET', '/v1/events?limit=100', { token: account.key });
  const types = events.body.data.map((e: { type: string }) => e.type).filter((t: string) => t.startsWith('snapshot.'));
  assert.deepEqual(types.sort(), ['snapshot.created', 'snapshot.created', 'snapshot.deleted']);
});

test("another account's snapshots and sandboxes are 404, as are ids never issued; a key without snapshots:write may list but not take or delete", async () => {
  const owner = await newAccount(stack.url, 'snapshot-owner');
  const other = await newAccount(stack.url, 'snapshot-other');
  const box = await sandboxFor(stack, owner.key);
  const taken = await snapshot(owner.key, box.id);
  assert.equal(taken.status, 201, JSON.stringify(taken.body));
  const id = taken.body.id as string;

  assertProblem(await call(stack.url, 'GET', `/v1/snapshots/${id}`, { token: other.key }), 404, 'snapshot_not_found');
  assertProblem(await call(stack.url, 'DELETE', `/v1/snapshots/${id}`, { token: other.key }), 404, 'snapshot_not_found');
  assertProblem(await createSandbox(stack.url, other.key, '', { snapshot: id }), 404, 'snapshot_not_found');
  assertProblem(await snapshot(other.key, box.id), 404, 'sandbox_not_found');
  assert.deepEqual((await call(stack.url, 'GET', '/v1/snapshots', { token: other.key })).body.data, []);
  assertProblem(await call(stack.url, 'GET', `/v1/snapshots?after=${id}`, { token: other.key }), 400, 'invalid_request');
  for (const forged of ['snap_zzzzzzzzzzzzzzzzzzzzzzzz', '..%2F..%2Fetc', 'snap_', `${id}x`, id.toUpperCase()]) {
    assertProblem(await call(stack.url, 'GET', `/v1/snapshots/${forged}`, { token: owner.key }), 404, 'snapshot_not_found');
    assertProblem(await createSandbox(stack.url, owner.key, '', { snapshot: forged }), 404, 'snapshot_not_found');
  }
  assert.equal(existsSync(stored(id)), true, 'still there');

  const readOnly = await call(stack.url, 'POST', '/v1/api-keys', { token: owner.token, body: { name: 'reader', scopes: ['sandboxes:read', 'sandboxes:write'] } });
  assert.equal(readOnly.status, 201, JSON.stringify(readOnly.body));
  assertProblem(await snapshot(readOnly.body.key, box.id), 403, 'insufficient_scope');
  assertProblem(await call(stack.url, 'DELETE', `/v1/snapshots/${id}`, { token: readOnly.body.key }), 403, 'insufficient_scope');
  assert.equal((await call(stack.url, 'GET', `/v1/snapshots/${id}`, { token: readOnly.body.key })).status, 200);
  // Nor leave one behind at its sandbox's end.
  assertProblem(await createSandbox(stack.url, readOnly.body.key, '', { snapshotOnDestroy: true }), 403, 'insufficient_scope');
});

test('a damaged snapshot starts nothing: 409 snapshot_corrupt when the create waits, a failed sandbox without the wait', async () => {
  const account = await newAccount(stack.url, 'snapshot-damage');
  const box = await sandboxFor(stack, account.key);
  assert.equal((await box.sh('head -c 100000 /dev/urandom > /workspace/data && echo marker > /workspace/marker')).exitCode, 0);
  const taken = await snapshot(account.key, box.id);
  assert.equal(taken.status, 201, JSON.stringify(taken.body));
  const bytes = readFileSync(stored(taken.body.id));
  bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
  writeFileSync(stored(taken.body.id), bytes);

  const waited = await createSandbox(stack.url, account.key, '', { snapshot: taken.body.id });
  assertProblem(waited, 409, 'snapshot_corrupt');
  const unwaited = await createSandbox(stack.url, account.key, '?wait=false', { snapshot: taken.body.id });
  assert.equal(unwaited.status, 201, JSON.stringify(unwaited.body));
  const ended = await eventually('the sandbox failed', 30_000, async () => {
    const s = await call(stack.url, 'GET', `/v1/sandboxes/${unwaited.body.id}`, { token: account.key });
    return s.body.status === 'pending' ? undefined : s.body;
  });
  assert.equal(ended.status, 'failed', JSON.stringify(ended));
  assert.match(ended.failureMessage, /^The snapshot is damaged/);
});

test('the storage quota: checked before a snapshot starts and as it streams; one that would pass it fails, keeps nothing, and says why', async () => {
  const account = await newAccount(stack.url, 'snapshot-quota');
  const box = await sandboxFor(stack, account.key);
  // Random bytes do not compress: past the quota as it streams.
  assert.equal((await box.sh(`head -c ${QUOTA + 512 * 1024} /dev/urandom > /workspace/big`)).exitCode, 0);
  const refused = await snapshot(account.key, box.id);
  assertProblem(refused, 429, 'snapshot_storage_limit_reached');
  assert.equal(refused.body.limitBytes, QUOTA);
  const [failed] = (await call(stack.url, 'GET', '/v1/snapshots', { token: account.key })).body.data;
  assert.deepEqual([failed.status, failed.failureCode, failed.sizeBytes], ['failed', 'snapshot_storage_limit_reached', 0]);
  assert.equal(existsSync(stored(failed.id)), false);
  assert.equal(existsSync(`${stored(failed.id)}.partial`), false);
  assertProblem(await createSandbox(stack.url, account.key, '', { snapshot: failed.id }), 409, 'snapshot_not_ready');
  const events = await call(stack.url, 'GET', '/v1/events?limit=100', { token: account.key });
  const failure = events.body.data.find((e: { type: string }) => e.type === 'snapshot.failed');
  assert.equal(failure?.data.snapshot.failureCode, 'snapshot_storage_limit_reached');

  // Within the quota it is kept; once the kept ones fill it, the next is refused before it starts.
  assert.equal((await box.sh(`rm /workspace/big && head -c ${QUOTA - 256 * 1024} /dev/urandom > /workspace/most`)).exitCode, 0);
  const kept = await snapshot(account.key, box.id);
  assert.equal(kept.status, 201, JSON.stringify(kept.body));
  assert.equal((await box.sh('rm /workspace/most && head -c 300000 /dev/urandom > /workspace/more')).exitCode, 0);
  assertProblem(await snapshot(account.key, box.id), 429, 'snapshot_storage_limit_reached');
  assert.equal((await call(stack.url, 'DELETE', `/v1/snapshots/${kept.body.id}`, { token: account.key })).status, 204);
  assert.equal((await snapshot(account.key, box.id)).status, 201, 'room again once one is deleted');
});

test("a sparse file larger than the sandbox's disk once filled comes back as it was: its length, its data, its holes", async () => {
  const account = await newAccount(stack.url, 'snapshot-sparse');
  const box = await sandboxFor(stack, account.key);
  // 3 GiB long (the disk holds 2), a few bytes of data at its start and at its end.
  const made = await box.sh('cd /workspace && truncate -s 3G sparse && printf head | dd of=sparse conv=notrunc 2>/dev/null && printf tail | dd of=sparse bs=1 seek=3221225468 conv=notrunc 2>/dev/null');
  assert.equal(made.exitCode, 0, made.stderr);
  const taken = await snapshot(account.key, box.id);
  assert.equal(taken.status, 201, JSON.stringify(taken.body));
  assert.ok(taken.body.sizeBytes < 1024 * 1024, `stored ${taken.body.sizeBytes} bytes`);
  const restored = await createSandbox(stack.url, account.key, '', { snapshot: taken.body.id });
  assert.equal(restored.body.status, 'running', JSON.stringify(restored.body));
  const seen = await fileClient(stack, account.key, restored.body.id).sh('cd /workspace && stat -c %s sparse && head -c 4 sparse && echo && tail -c 4 sparse && echo && du -k sparse | cut -f1');
  assert.equal(seen.exitCode, 0, seen.stderr);
  const [size, head, tail, kib] = seen.stdout.trim().split('\n');
  assert.deepEqual([size, head, tail], ['3221225472', 'head', 'tail']);
  assert.ok(Number(kib) < 1024, `${kib} KiB on disk: its holes were filled`);
});

test('a stopped sandbox has no workspace to snapshot: 409 sandbox_not_running', async () => {
  const account = await newAccount(stack.url, 'snapshot-stopped');
  const box = await sandboxFor(stack, account.key);
  assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${box.id}`, { token: account.key })).status, 200);
  assertProblem(await snapshot(account.key, box.id), 409, 'sandbox_not_running');
});

test("the account shows what its snapshots hold; the workers' sweep deletes those past their retention and fails an abandoned copy", async () => {
  const account = await newAccount(stack.url, 'snapshot-retention');
  const box = await sandboxFor(stack, account.key);
  assert.equal((await box.sh('head -c 50000 /dev/urandom > /workspace/data')).exitCode, 0);
  const old = await snapshot(account.key, box.id);
  const fresh = await snapshot(account.key, box.id);
  assert.equal(old.status, 201, JSON.stringify(old.body));
  const usage = (await call(stack.url, 'GET', '/v1/account', { token: account.key })).body.usage.snapshotStorage;
  assert.deepEqual(usage, { usedBytes: old.body.sizeBytes + fresh.body.sizeBytes, limitBytes: QUOTA });

  // Past its retention, and a copy whose process died before it finished (its partial bytes left).
  const pg = stack.apis[0]!.deps.pg;
  await pg.query(`update snapshots set expires_at = now() - interval '1 second' where id = $1`, [old.body.id]);
  const abandoned = newId('snap');
  await pg.query(
    `insert into snapshots (id, account_id, sandbox_id, image, status, created_at, expires_at)
     values ($1, $2, $3, 'x', 'pending', now() - interval '2 hours', now() + interval '1 day')`,
    [abandoned, account.id, box.id],
  );
  writeFileSync(`${stored(abandoned)}.partial`, 'half');
  // The reaper's own sweep may take them first: what is left afterwards is the same.
  await stack.workers[0]!.deps.snapshots.sweep();
  assert.equal(existsSync(stored(old.body.id)), false);
  assert.equal(existsSync(`${stored(abandoned)}.partial`), false);
  assertProblem(await call(stack.url, 'GET', `/v1/snapshots/${old.body.id}`, { token: account.key }), 404, 'snapshot_not_found');
  const left = (await call(stack.url, 'GET', `/v1/snapshots/${abandoned}`, { token: account.key })).body;
  assert.deepEqual([left.status, left.failureCode], ['failed', 'internal_error']);
  assert.equal((await call(stack.url, 'GET', `/v1/snapshots/${fresh.body.id}`, { token: account.key })).status, 200);
  const after = (await call(stack.url, 'GET', '/v1/account', { token: account.key })).body.usage.snapshotStorage;
  assert.equal(after.usedBytes, fresh.body.sizeBytes);
});

test('?wait=false answers the snapshot pending at once; a worker copies it, and it is ready to start from', async () => {
  const account = await newAccount(stack.url, 'snapshot-nowait');
  const box = await sandboxFor(stack, account.key);
  assert.equal((await box.sh('echo later > /workspace/later.txt')).exitCode, 0);
  const taken = await call(stack.url, 'POST', `/v1/sandboxes/${box.id}/snapshots?wait=false`, { token: account.key, body: { name: 'async' } });
  assert.equal(taken.status, 201, JSON.stringify(taken.body));
  assert.deepEqual([taken.body.status, taken.body.sizeBytes], ['pending', 0]);
  assertProblem(await createSandbox(stack.url, account.key, '', { snapshot: taken.body.id }), 409, 'snapshot_not_ready');
  const ready = await eventually('the snapshot is ready', 30_000, async () => {
    const s = await call(stack.url, 'GET', `/v1/snapshots/${taken.body.id}`, { token: account.key });
    return s.body.status === 'pending' ? undefined : s.body;
  });
  assert.equal(ready.status, 'ready', JSON.stringify(ready));
  assert.ok(ready.sizeBytes > 0);
  const restored = await createSandbox(stack.url, account.key, '', { snapshot: taken.body.id });
  assert.equal(restored.body.status, 'running', JSON.stringify(restored.body));
  assert.equal((await fileClient(stack, account.key, restored.body.id).sh('cat /workspace/later.txt')).stdout, 'later\n');
  const events = await call(stack.url, 'GET', '/v1/events?limit=100', { token: account.key });
  assert.ok(events.body.data.some((e: { type: string; data: { snapshot?: { id: string } } }) => e.type === 'snapshot.created' && e.data.snapshot?.id === taken.body.id));
});

test("links that climb out of the workspace are kept as links: the copy, which runs beside the sandbox on the local runtime, follows none of them", async () => {
  const account = await newAccount(stack.url, 'snapshot-links');
  const box = await sandboxFor(stack, account.key);
  // Targets that mean something else outside the sandbox: the host's processes, its root, its data directory.
  const links = `cd /workspace && ln -s /proc/1/environ init-env && ln -s / root && ln -s ${stack.config.PADDOCK_DATA_DIR} data && ln -s ../../.. up && mkdir d && ln -s /etc/passwd d/passwd`;
  assert.equal((await box.sh(links)).exitCode, 0);
  const taken = await snapshot(account.key, box.id);
  assert.equal(taken.status, 201, JSON.stringify(taken.body));
  const listing = execFileSync('sh', ['-c', `zstd -dc '${stored(taken.body.id)}' | tar -tvf -`], { encoding: 'utf8' });
  const entries = listing.split('\n').filter(Boolean);
  assert.equal(entries.length, 7, listing);
  for (const [name, target] of [['init-env', '/proc/1/environ'], ['root', '/'], ['data', stack.config.PADDOCK_DATA_DIR], ['up', '../../..'], ['d/passwd', '/etc/passwd']]) {
    assert.ok(entries.some((e) => e.startsWith('l') && e.endsWith(`./${name} -> ${target}`)), `${name} is not a link in ${listing}`);
  }
  // Nothing but the links and the one directory: no file's bytes came along.
  const bytes = Number(execFileSync('sh', ['-c', `zstd -dc '${stored(taken.body.id)}' | wc -c`], { encoding: 'utf8' }).trim());
  assert.ok(bytes <= 20 * 1024, `${bytes} bytes of tar for seven entries`);
});

test('where the host holds the workspace (local), the copy and the restore run beside the sandbox, elsewhere in it; the sandbox frozen meanwhile and running on after', async () => {
  const deps = stack.apis[0]!.deps;
  const runtime = deps.runtime;
  const account = await newAccount(stack.url, 'snapshot-beside');
  const box = await sandboxFor(stack, account.key);
  assert.equal((await box.sh(MAKE_TREE)).exitCode, 0);
  const before = await box.sh(DESCRIBE_TREE);
  const beside: string[][] = [];
  const counted: Pick<typeof runtime, 'exec' | 'execBeside'> = {
    exec: (id, request) => runtime.exec(id, request),
    ...(runtime.execBeside && {
      execBeside: (id: string, request: Parameters<NonNullable<typeof runtime.execBeside>>[1]) => {
        beside.push(request.argv);
        return runtime.execBeside!(id, request);
      },
    }),
  };
  const snapshots = new Snapshots({ em: deps.orm.em, runtime: counted, store: snapshotStore(stack.config), announcer: deps.events, log: deps.log }, stack.config);
  const taken = await snapshots.take(account.id, box.id, {});
  assert.equal(taken.status, 'ready');
  assert.equal(beside.length, runtime.name === 'local' ? 1 : 0, 'the copy ran beside the sandbox once, on the local runtime');
  assert.equal(Number(taken.size_bytes), readFileSync(stored(taken.id)).length);
  assert.equal(taken.sha256?.toString('hex'), createHash('sha256').update(readFileSync(stored(taken.id))).digest('hex'));
  // Nothing of the sandbox stays stopped: a command runs in it at once.
  assert.equal((await box.sh('ps -eo stat= | grep -c "^T" || true')).stdout.trim(), '0');
  const target = await sandboxFor(stack, account.key);
  await snapshots.restore(account.id, target.id, taken.id, 60_000);
  assert.equal(beside.length, runtime.name === 'local' ? 2 : 0, 'the restore ran beside the sandbox once, on the local runtime');
  assert.equal((await target.sh(DESCRIBE_TREE)).stdout, before.stdout);
  const restored = await createSandbox(stack.url, account.key, '', { snapshot: taken.id });
  assert.equal(restored.status, 201, JSON.stringify(restored.body));
  assert.equal((await fileClient(stack, account.key, restored.body.id).sh(DESCRIBE_TREE)).stdout, before.stdout);
});

test("the hold beside a copy lets the sandbox go once the copy is done, though its stdin never ends (a command forked as it froze, stopped before its exec, holds a copy of it)", async () => {
  const deps = stack.apis[0]!.deps;
  const runtime = deps.runtime;
  const account = await newAccount(stack.url, 'snapshot-release');
  const box = await sandboxFor(stack, account.key);
  assert.equal((await box.sh(MAKE_TREE)).exitCode, 0);
  let holds = 0;
  const stuck: Pick<typeof runtime, 'exec' | 'execBeside'> = {
    exec: (id, request) => {
      const source = request.stdin;
      if (request.argv[3] !== 'paddock-hold' || !isStdinStream(source)) return runtime.exec(id, request);
      holds++;
      let exited!: () => void;
      const exit = new Promise<void>((resolve) => (exited = resolve));
      const stdin = (async function* () {
        yield* source;
        await exit;
      })();
      return runtime.exec(id, { ...request, stdin }).finally(exited);
    },
    ...(runtime.execBeside && { execBeside: runtime.execBeside.bind(runtime) }),
  };
  // A hold that waited for its stdin to end would be killed only at this timeout.
  const options = { ...stack.config, PADDOCK_ARCHIVE_TIMEOUT_SECONDS: 30 };
  const snapshots = new Snapshots({ em: deps.orm.em, runtime: stuck, store: snapshotStore(stack.config), announcer: deps.events, log: deps.log }, options);
  const started = performance.now();
  const taken = await snapshots.take(account.id, box.id, {});
  assert.equal(taken.status, 'ready');
  assert.ok(performance.now() - started < 20_000, `the take took ${Math.round(performance.now() - started)} ms`);
  assert.equal(holds, runtime.execBeside ? 1 : 0);
  assert.equal((await box.sh('ps -eo stat= | grep -c "^T" || true')).stdout.trim(), '0');
});

test("a stored archive with members that climb out (.., absolute, through a link) writes nothing outside the restored workspace", async () => {
  const account = await newAccount(stack.url, 'snapshot-crafted');
  const box = await sandboxFor(stack, account.key);
  /** A snapshot whose stored file is `members`, what no copy of Paddock's writes, its record made to match; and a create from it. */
  const restoreFrom = async (members: TarMember[]) => {
    const taken = await snapshot(account.key, box.id);
    assert.equal(taken.status, 201, JSON.stringify(taken.body));
    const crafted = execFileSync('zstd', ['-q', '-c'], { input: tarOf(members) });
    writeFileSync(stored(taken.body.id), crafted);
    await stack.apis[0]!.deps.orm.em.fork().getConnection().execute('update snapshots set size_bytes = ?, sha256 = ? where id = ?', [crafted.length, createHash('sha256').update(crafted).digest(), taken.body.id]);
    return createSandbox(stack.url, account.key, '', { snapshot: taken.body.id });
  };
  const mark = `climbed-${newId('snap').slice(5)}`;
  const nowhereOutside = async (restoredId?: string) => {
    const findIn = (dir: string) => execFileSync('sh', ['-c', `find ${dir} -xdev -name '${mark}-*' 2>/dev/null || true`], { encoding: 'utf8' }).trim();
    // The host's temporary directory and the data directory (the store's, the sandboxes' disks).
    assert.equal(findIn('/tmp'), '');
    assert.equal(findIn(stack.config.PADDOCK_DATA_DIR).split('\n').filter((f) => f && !f.includes('/workspace/')).join('\n'), '');
    if (!restoredId) return;
    const found = await fileClient(stack, account.key, restoredId).sh(`find / -xdev -name '${mark}-*' 2>/dev/null; find /tmp -name '${mark}-*' 2>/dev/null; true`);
    assert.deepEqual(found.stdout.split('\n').filter((f) => f && !f.startsWith('/workspace/')), [], found.stdout);
  };

  // Names with "..", and links followed: tar refuses them, and the sandbox ends failed saying so.
  const refused = await restoreFrom([
    { name: 'kept.txt', data: 'kept\n' },
    { name: `../${mark}-up`, data: 'x' },
    { name: `../../../../../../tmp/${mark}-deep`, data: 'x' },
    { name: 'out', type: 'symlink', linkname: '/tmp' },
    { name: `out/${mark}-through`, data: 'x' },
    { name: 'parent', type: 'symlink', linkname: '..' },
    { name: `parent/${mark}-parent`, data: 'x' },
  ]);
  assert.equal(refused.status, 201, JSON.stringify(refused.body));
  assert.deepEqual([refused.body.status, refused.body.destroyReason], ['failed', 'failed'], JSON.stringify(refused.body));
  assert.match(refused.body.failureMessage, /Member name contains '\.\.'/);
  await nowhereOutside();

  // An absolute name is taken as one under the workspace, and the sandbox runs.
  const kept = await restoreFrom([
    { name: 'kept.txt', data: 'kept\n' },
    { name: `/tmp/${mark}-absolute`, data: 'x' },
  ]);
  assert.equal(kept.body.status, 'running', JSON.stringify(kept.body));
  const inside = fileClient(stack, account.key, kept.body.id);
  assert.equal((await inside.sh(`cat /workspace/kept.txt /workspace/tmp/${mark}-absolute`)).stdout, 'kept\nx');
  await nowhereOutside(kept.body.id);
});

test('an image without zstd: Paddock compresses the tar and decompresses it back, to the same workspace', async () => {
  const account = await newAccount(stack.url, 'snapshot-no-zstd');
  const box = await sandboxFor(stack, account.key);
  const target = await sandboxFor(stack, account.key);
  // What the scripts use, without zstd, on a PATH of its own in each sandbox.
  const noZstd = 'mkdir -p /tmp/no-zstd && for c in sh tar find wc head; do ln -sf "$(command -v $c)" /tmp/no-zstd/$c; done && ! PATH=/tmp/no-zstd command -v zstd';
  for (const b of [box, target]) assert.equal((await b.sh(noZstd)).exitCode, 0);
  assert.equal((await box.sh(MAKE_TREE)).exitCode, 0);
  const before = await box.sh(DESCRIBE_TREE);
  const deps = stack.apis[0]!.deps;
  const runtime = deps.runtime;
  const withoutZstd: Pick<typeof runtime, 'exec'> = { exec: (id, request) => runtime.exec(id, { ...request, env: { ...request.env, PATH: '/tmp/no-zstd' } }) };
  const probe = await withoutZstd.exec(box.id, { argv: ['sh', '-c', 'command -v zstd'], timeoutMs: 10_000 });
  assert.notEqual(probe.exitCode, 0, 'the scripts find no zstd');
  const snapshots = new Snapshots({ em: deps.orm.em, runtime: withoutZstd, store: snapshotStore(stack.config), announcer: deps.events, log: deps.log }, stack.config);

  const taken = await snapshots.take(account.id, box.id, {});
  assert.equal(taken.status, 'ready');
  const stored = readFileSync(join(storeDir, `${taken.id}.tar.zst`));
  assert.deepEqual([...stored.subarray(0, 4)], [0x28, 0xb5, 0x2f, 0xfd], 'a zstd frame, made by Paddock');
  await snapshots.restore(account.id, target.id, taken.id, 60_000);
  const after = await target.sh(DESCRIBE_TREE);
  assert.equal(after.stdout, before.stdout);
});

const background = (key: string, sandboxId: string, command: string) =>
  call(stack.url, 'POST', `/v1/sandboxes/${sandboxId}/exec`, { token: key, body: { command, background: true } });
const TICKS = 'while :; do date +%s%N >> /workspace/ticks; sleep 0.05; done';
const events = async (key: string) => (await call(stack.url, 'GET', '/v1/events?limit=100', { token: key })).body.data as { type: string; data: any }[];

test('snapshotOnDestroy: a DELETE keeps the workspace first; the destroyed sandbox and its sandbox.destroyed event name the snapshot, which starts a sandbox', async () => {
  const account = await newAccount(stack.url, 'snapshot-final');
  const created = await createSandbox(stack.url, account.key, '', { snapshotOnDestroy: true });
  assert.equal(created.body.status, 'running', JSON.stringify(created.body));
  assert.deepEqual([created.body.snapshotOnDestroy, created.body.finalSnapshotId], [true, null]);
  const box = fileClient(stack, account.key, created.body.id);
  assert.equal((await box.sh('echo kept > /workspace/kept.txt')).exitCode, 0);
  assert.equal((await background(account.key, box.id, TICKS)).status, 202);
  await eventually('the ticks are written', 10_000, async () => ((await box.sh('test -s /workspace/ticks')).exitCode === 0 ? true : undefined));

  const destroyed = await call(stack.url, 'DELETE', `/v1/sandboxes/${box.id}`, { token: account.key });
  assert.equal(destroyed.status, 200, JSON.stringify(destroyed.body));
  assert.equal(destroyed.body.state, 'destroyed', JSON.stringify(destroyed.body));
  const finalId = destroyed.body.finalSnapshotId as string;
  assert.match(finalId, /^snap_/);
  const final = (await call(stack.url, 'GET', `/v1/snapshots/${finalId}`, { token: account.key })).body;
  assert.deepEqual([final.status, final.sandboxId], ['ready', box.id]);
  const said = (await events(account.key)).find((e) => e.type === 'sandbox.destroyed' && e.data.sandbox.id === box.id);
  assert.equal(said?.data.sandbox.finalSnapshotId, finalId);

  const restored = await createSandbox(stack.url, account.key, '', { snapshot: finalId });
  assert.equal(restored.body.status, 'running', JSON.stringify(restored.body));
  assert.equal(restored.body.snapshotOnDestroy, false);
  const again = fileClient(stack, account.key, restored.body.id);
  assert.equal((await again.sh('cat /workspace/kept.txt')).stdout, 'kept\n');
  assert.match((await again.sh('tail -n 1 /workspace/ticks')).stdout, /^[0-9]{19}\n$/);
  // A sandbox destroyed without it keeps nothing.
  const plain = await sandboxFor(stack, account.key);
  const gone = await call(stack.url, 'DELETE', `/v1/sandboxes/${plain.id}`, { token: account.key });
  assert.equal(gone.body.finalSnapshotId, null);
  assert.equal((await call(stack.url, 'GET', '/v1/snapshots', { token: account.key })).body.data.length, 1);
});

test("snapshotOnDestroy with two enders: the workers' sweep, coming on the sandbox while its DELETE's job copies it, neither copies it again nor destroys it under that copy", async () => {
  const account = await newAccount(stack.url, 'snapshot-final-race');
  const created = await createSandbox(stack.url, account.key, '', { snapshotOnDestroy: true });
  assert.equal(created.body.status, 'running', JSON.stringify(created.body));
  const box = fileClient(stack, account.key, created.body.id);
  // A copy that takes a while: a GiB of zeros written, which tar reads whole (a minute to write it on a busy host).
  assert.equal((await box.sh('head -c 1G /dev/zero > /workspace/zeros', 60_000)).exitCode, 0);
  const list = async () => (await call(stack.url, 'GET', '/v1/snapshots', { token: account.key })).body.data as { id: string; status: string }[];

  const destroying = call(stack.url, 'DELETE', `/v1/sandboxes/${box.id}`, { token: account.key });
  await eventually('the final copy begins', 30_000, async () => ((await list()).some((s) => s.status === 'pending') ? true : undefined), 10);
  // The stack's own sweep may hold the sweep's lock a moment: this one runs once it is free.
  const report = await eventually('a sweep runs', 10_000, () => sweepOnce(stack.workers[0]!.deps), 10);
  assert.ok(report && report.retriedTerminating >= 1, `the sweep took up the terminating sandbox: ${JSON.stringify(report)}`);
  const destroyed = await destroying;
  assert.equal(destroyed.body.state, 'destroyed', JSON.stringify(destroyed.body));
  const kept = await list();
  assert.deepEqual(kept.map((s) => [s.id, s.status]), [[destroyed.body.finalSnapshotId, 'ready']]);
  assert.deepEqual((await events(account.key)).filter((e) => e.type === 'snapshot.failed'), []);
});

test("snapshotOnDestroy at the cap: no process runs on, the workspace is kept, the sandbox ends expired; a copy past the account's storage is given up with snapshot.failed, never the end", async () => {
  const account = await newAccount(stack.url, 'snapshot-final-cap');
  const created = await createSandbox(stack.url, account.key, '', { snapshotOnDestroy: true, timeoutSeconds: 3 });
  assert.equal(created.body.status, 'running', JSON.stringify(created.body));
  const box = fileClient(stack, account.key, created.body.id);
  assert.equal((await background(account.key, box.id, TICKS)).status, 202);
  const ended = await eventually('the sandbox is destroyed at its cap', 30_000, async () => {
    const s = (await call(stack.url, 'GET', `/v1/sandboxes/${box.id}`, { token: account.key })).body;
    return s.state === 'destroyed' ? s : undefined;
  });
  assert.equal(ended.destroyReason, 'expired');
  assert.match(ended.finalSnapshotId, /^snap_/, JSON.stringify(ended));
  const restored = await createSandbox(stack.url, account.key, '', { snapshot: ended.finalSnapshotId });
  assert.equal(restored.body.status, 'running', JSON.stringify(restored.body));
  const lastTick = (await fileClient(stack, account.key, restored.body.id).sh('tail -n 1 /workspace/ticks')).stdout.trim();
  const lastMs = Number(BigInt(lastTick) / 1_000_000n);
  // Its expire job runs at expiresAt, and the ticks stop as it does (leeway for a loaded host).
  assert.ok(lastMs <= Date.parse(ended.expiresAt) + 5000, `${new Date(lastMs).toISOString()} vs ${ended.expiresAt}`);

  // Past the storage: the sandbox still ends at its cap, naming no snapshot, and the failure says why.
  const full = await createSandbox(stack.url, account.key, '', { snapshotOnDestroy: true, timeoutSeconds: 3 });
  assert.equal(full.body.status, 'running', JSON.stringify(full.body));
  assert.equal((await fileClient(stack, account.key, full.body.id).sh(`head -c ${QUOTA + 256 * 1024} /dev/urandom > /workspace/big`)).exitCode, 0);
  const over = await eventually('the full sandbox is destroyed at its cap', 30_000, async () => {
    const s = (await call(stack.url, 'GET', `/v1/sandboxes/${full.body.id}`, { token: account.key })).body;
    return s.state === 'destroyed' ? s : undefined;
  });
  assert.deepEqual([over.destroyReason, over.finalSnapshotId], ['expired', null]);
  const failure = (await events(account.key)).find((e) => e.type === 'snapshot.failed' && e.data.snapshot.sandboxId === full.body.id);
  assert.equal(failure?.data.snapshot.failureCode, 'snapshot_storage_limit_reached');
});

test("the final snapshot's kill, as a tenant may run it too: every process but the sandbox's own init ends, and the sandbox runs on", async () => {
  const account = await newAccount(stack.url, 'snapshot-halt');
  const box = await sandboxFor(stack, account.key);
  const running = `for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done`;
  assert.equal((await background(account.key, box.id, 'sleep 301')).status, 202);
  await eventually('the background process runs', 10_000, async () => ((await box.sh(running)).stdout.includes('sleep 301') ? true : undefined));
  const halted = await call(stack.url, 'POST', `/v1/sandboxes/${box.id}/exec`, { token: account.key, body: { command: HALT_SCRIPT } });
  // On Kubernetes the exec's own wrapper is killed with the rest: what it answers is not the point, but never a 500.
  assert.notEqual(halted.status, 500, JSON.stringify(halted.body));
  const left = await box.sh(running);
  assert.equal(left.exitCode, 0, left.stderr);
  assert.doesNotMatch(left.stdout, /sleep 301/);
  assert.equal((await box.sh('echo alive')).stdout, 'alive\n');
});

test('a snapshot copies a still workspace: every process of the sandbox is stopped while it is copied, and each runs on after', async () => {
  const account = await newAccount(stack.url, 'snapshot-freeze');
  const box = await sandboxFor(stack, account.key);
  // A copy that takes a while: a GiB of zeros written (no holes to skip), which tar reads whole and zstd makes next to nothing of.
  assert.equal((await box.sh('head -c 1G /dev/zero > /workspace/zeros', 60_000)).exitCode, 0);
  const ticks = async () => (await box.sh('cat /workspace/ticks')).stdout.trim().split('\n');
  assert.equal((await background(account.key, box.id, 'while :; do date +%s%N >> /workspace/ticks; sleep 0.01; done')).status, 202);
  await eventually('the ticker ticks', 10_000, async () => ((await ticks()).length >= 5 ? true : undefined));

  const taken = await snapshot(account.key, box.id);
  assert.equal(taken.status, 201, JSON.stringify(taken.body));
  const restored = await createSandbox(stack.url, account.key, '', { snapshot: taken.body.id });
  assert.equal(restored.status, 201, JSON.stringify(restored.body));
  const copied = (await fileClient(stack, account.key, restored.body.id).sh('tail -n 1 /workspace/ticks')).stdout.trim();
  assert.match(copied, /^[0-9]{19}$/);

  // Between the copy's last tick and the live sandbox's ticks after it lies the whole copy, not the
  // ticker's 10 ms. The first tick after it may hold a time read before the freeze and written
  // after it (date stopped between the two): the longest of the next three gaps is the freeze's.
  const live = await eventually('the ticker ticks again after the copy', 10_000, async () => {
    const all = await ticks();
    return all.indexOf(copied) >= 0 && all.indexOf(copied) + 3 < all.length ? all : undefined;
  });
  const at = live.indexOf(copied);
  const gaps = [0, 1, 2].map((i) => Number((BigInt(live[at + i + 1]!) - BigInt(live[at + i]!)) / 1_000_000n));
  const stillMs = Math.max(...gaps);
  assert.ok(stillMs >= 300, `the ticker ran on while the workspace was copied (gaps after the copy's last tick: ${gaps.join(', ')} ms)`);
  const states = await box.sh(`for p in /proc/[0-9]*; do s=$(cat $p/stat 2>/dev/null) && echo "\${s##*) }" | cut -c1; done | sort | uniq -c`);
  assert.doesNotMatch(states.stdout, / T$/m, 'no process is left stopped');
});

test("the resume after a take killed midway (its own exit never continued what it stopped): every stopped process runs again", async () => {
  const account = await newAccount(stack.url, 'snapshot-resume');
  const box = await sandboxFor(stack, account.key);
  const state = `for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); s=$(cat $p/stat 2>/dev/null); case "$c" in 'sleep 302 '*) echo "\${s##*) }" | cut -c1;; esac; done`;
  assert.equal((await background(account.key, box.id, 'sleep 302')).status, 202);
  await eventually('the background process runs', 10_000, async () => ((await box.sh(state)).stdout === 'S\n' ? true : undefined));
  assert.equal((await box.sh("pkill -STOP -x sleep || kill -STOP $(pidof sleep)")).exitCode, 0);
  assert.equal((await box.sh(state)).stdout, 'T\n');
  const resumed = await box.sh(RESUME_SCRIPT);
  assert.equal(resumed.exitCode, 0, resumed.stderr);
  assert.equal((await box.sh(state)).stdout, 'S\n');
});
