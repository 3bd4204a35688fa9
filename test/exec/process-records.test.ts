import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIST, PROCS_DIR } from '../../api/services/processes/scripts.ts';
import { parseRecords } from '../../api/services/processes/records.ts';

// The LIST script's reading of a process's state, run by the host's sh on a directory laid out as
// the runner lays it out. `kill` is a function here, standing in for the moment between LIST's
// two looks: the runner, which records the exit before it ends, finishing in between.

const ID = 'proc_0123456789abcdefghijklmn';
const DEAD_PID = '2147483646';

function listWith(layout: (dir: string) => void, killDoes: string): string {
  const base = mkdtempSync(join(tmpdir(), 'paddock-procs-'));
  try {
    const dir = join(base, ID);
    mkdirSync(dir);
    writeFileSync(join(dir, 'started'), '1700000000000000000\n');
    writeFileSync(join(dir, 'command'), `${Buffer.from('sleep 1; exit 4').toString('base64')}\n`);
    writeFileSync(join(dir, 'runner'), `${DEAD_PID}\n`);
    layout(dir);
    const script = `kill() { ${killDoes}; }\n${LIST.replaceAll(PROCS_DIR, base)}`;
    return execFileSync('sh', ['-c', script, 'sh', ID], { encoding: 'utf8' });
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

test('a process whose runner ends between LIST’s two looks is read with its exit status, not as lost', () => {
  // The first look finds no exit; the runner then records it and ends; the second look finds it.
  const text = listWith(() => undefined, `echo "4 1700000001000000000" > "$d/exit"; return 1`);
  const [record] = parseRecords(text, undefined);
  assert.equal(record?.status, 'exited', text);
  assert.equal(record?.exitCode, 4, text);
  assert.equal(record?.signal, null);
});

test('a runner gone without recording an exit is lost; a live one is running; a recorded exit is read', () => {
  const lost = parseRecords(listWith(() => undefined, 'return 1'), undefined)[0];
  assert.deepEqual([lost?.status, lost?.exitCode, lost?.signal], ['exited', null, null]);
  const running = parseRecords(listWith(() => undefined, 'return 0'), undefined)[0];
  assert.deepEqual([running?.status, running?.endedAt], ['running', null]);
  const recorded = parseRecords(listWith((dir) => writeFileSync(join(dir, 'exit'), '137 1700000002000000000\n'), 'return 1'), undefined)[0];
  assert.deepEqual([recorded?.exitCode, recorded?.signal], [null, 'SIGKILL']);
});
