import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { eventually } from '../helpers/eventually.ts';
import { run, setupLocalRuntime } from '../helpers/local-runtime.ts';

// Destroy against what a sandbox can make of its files (issue 13): a tree deeper than PATH_MAX
// made destroy fail forever, and 600k files took 30 s and 1.45 GB. Destroy ends once nothing of
// the sandbox runs; its files go afterwards, in bounded memory, whatever their shape.

test('a tree deeper than PATH_MAX with thousands of files is destroyed, and removed afterwards', async (t) => {
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
  await runtime.destroy(id);
  assert.equal(await runtime.get(id), undefined);
  const trash = join(options.dataDir, 'trash');
  await eventually('the destroyed files are removed', 60_000, async () => ((await readdir(trash)).length === 0 ? true : undefined), 200);
  assert.deepEqual(await readdir(join(options.dataDir, 'sandboxes')), []);
});
