import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { eventually } from '../helpers/eventually.ts';
import { hostProcesses } from '../helpers/processes.ts';
import { run, setupLocalRuntime } from '../helpers/local-runtime.ts';
import { TEST_SANDBOXES_CPU_WEIGHT } from '../helpers/config.ts';
import { newId } from '../../shared/ids.ts';
import { createLocalRuntime } from '../../shared/runtime/local/index.ts';
import { createLogger } from '../../shared/logger.ts';

// Destroy against what a sandbox can make of its files: a tree deeper than PATH_MAX
// made destroy fail forever, and 600k files took 30 s and 1.45 GB. Destroy ends once nothing of
// the sandbox runs; its files go afterwards, in bounded memory, whatever their shape.

test('a tree deeper than PATH_MAX with thousands of files is destroyed, and removed afterwards by an rm from the spawner', async (t) => {
  const { runtime, options, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const made = await run(runtime, id, [
    'sh',
    '-c',
    // Relative steps, as a shell's cd would refuse a path past PATH_MAX: 60 levels of 200 bytes.
    `cd /workspace && mkdir many && (cd many && seq 1 20000 | xargs touch) && python3 -c "import os
for _ in range(60): os.mkdir('d' * 200); os.chdir('d' * 200)
open('deepest', 'w').close()
print(60 * 201)"`,
  ], { timeoutMs: 120_000 }); // 20,000 files: seconds on a busy host
  assert.equal(made.exitCode, 0, made.stderr);
  assert.ok(Number(made.stdout.trim()) > 4096, `the tree is ${made.stdout.trim()} bytes deep`);
  // Who runs the removal's rm: the runtime's spawner, never the runtime's own process.
  const trash = join(options.dataDir, 'trash');
  const removers = new Map<number, number>();
  const sampler = setInterval(() => {
    for (const p of rmsOf(trash)) removers.set(p.pid, p.ppid);
  }, 2);
  t.after(() => clearInterval(sampler));
  await runtime.destroy(id);
  assert.equal(await runtime.get(id), undefined);
  await eventually('the destroyed files are removed', 60_000, async () => ((await readdir(trash)).length === 0 ? true : undefined), 200);
  clearInterval(sampler);
  assert.deepEqual(await readdir(join(options.dataDir, 'sandboxes')), []);
  assert.ok(removers.size > 0, 'the rm of 20,000 files was seen');
  for (const ppid of removers.values()) {
    assert.notEqual(ppid, process.pid, 'not forked by the runtime\'s process');
    assert.match(readFileSync(`/proc/${ppid}/cmdline`, 'utf8'), /spawner-main\.ts/, 'forked by the spawner');
  }
});

test('a runtime that closes right after a destroy waits for its files to be removed, and cuts no rm short', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'paddock-local-close-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const lines: string[] = [];
  const log = createLogger('warn', 'test', { write: (line: string) => void lines.push(line) });
  const runtime = createLocalRuntime({ dataDir, memoryMb: 256, pidsMax: 128, sandboxesCpuWeight: TEST_SANDBOXES_CPU_WEIGHT, log });
  const id = newId('sbx');
  await runtime.create({ id, accountId: 'acct_test', capSeconds: 600 });
  const made = await run(runtime, id, ['sh', '-c', 'cd /workspace && mkdir many && cd many && seq 1 20000 | xargs touch && echo made'], { timeoutMs: 120_000 });
  assert.equal(made.stdout.trim(), 'made', made.stderr);
  await runtime.destroy(id);
  // The removal of 20,000 files is still running here (the destroy does not wait for it).
  await runtime.close();
  assert.deepEqual(await readdir(join(dataDir, 'trash')), [], 'nothing is left in the trash');
  assert.deepEqual(lines.filter((l) => /left for the next sweep|could not remove/.test(l)), []);
});

/** The `rm` processes removing something under `dir`, with their parents. */
function rmsOf(dir: string): { pid: number; ppid: number }[] {
  return hostProcesses().filter((p) => p.args[0]?.endsWith('rm') && p.args.some((a) => a.startsWith(dir)));
}
