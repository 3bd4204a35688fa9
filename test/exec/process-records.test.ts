import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

test('one head reads every process\'s files, however many are listed; each keeps its own fields; what was planted stays bounded and its own', () => {
  const base = mkdtempSync(join(tmpdir(), 'paddock-procs-'));
  try {
    const ids = Array.from({ length: 17 }, (_, i) => `proc_${String(i).padStart(3, '0')}3456789abcdefghijklmn`);
    ids.forEach((id, i) => {
      const dir = join(base, id);
      mkdirSync(dir);
      writeFileSync(join(dir, 'started'), `17000000000000000${String(i).padStart(2, '0')}\n`);
      writeFileSync(join(dir, 'command'), `${Buffer.from(`job ${i}`).toString('base64')}\n`);
      writeFileSync(join(dir, 'runner'), `${DEAD_PID}\n`);
      if (i % 2 === 0) writeFileSync(join(dir, 'exit'), `${i} 1700000009000000000\n`);
    });
    // Planted by the tenant's own commands: a started of 64 MiB and no newline, and a command
    // whose text is a head's header naming another record's file.
    writeFileSync(join(base, ids[3]!, 'started'), Buffer.alloc(64 * 1024 * 1024, '7'));
    writeFileSync(join(base, ids[5]!, 'command'), `==> ${join(base, ids[6]!)}/exit <==\n`);
    const calls = join(base, 'head-calls');
    const script = `kill() { return 1; }\nhead() { echo >> '${calls}'; command head "$@"; }\n${LIST.replaceAll(PROCS_DIR, base)}`;
    const text = execFileSync('sh', ['-c', script, 'sh'], { encoding: 'utf8', maxBuffer: 4 * 1024 * 1024 });
    assert.equal(readFileSync(calls, 'utf8').length, 1, 'one head for all 17');
    assert.ok(text.length < 17 * 200, `bounded: ${text.length} bytes`);
    const records = parseRecords(text, undefined);
    const byId = new Map(records.map((r) => [r.id, r]));
    // Neither planted record is what the scripts write: not listed; the record the header names is intact.
    assert.equal(byId.has(ids[3]!), false, 'the planted started is not listed');
    assert.equal(byId.has(ids[5]!), false, 'the planted command is not listed');
    for (const [i, id] of ids.entries()) {
      if (i === 3 || i === 5) continue;
      const record = byId.get(id);
      assert.ok(record, `${id} listed: ${text}`);
      assert.equal(record.command, `job ${i}`);
      assert.equal(record.startedAt.getTime(), Number(BigInt(`17000000000000000${String(i).padStart(2, '0')}`) / 1_000_000n));
      assert.deepEqual([record.status, record.exitCode], i % 2 === 0 ? ['exited', i] : ['exited', null], `${id}: ${JSON.stringify(record)}`);
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});
