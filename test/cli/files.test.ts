import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { failsWith, json, newSession, ok, signedUpUser, tempHome, type CliUser } from './cli-helpers.ts';

const stack = await startSandboxStack();
let shared: CliUser | undefined;

/** One user with one running session: files commands pick it on their own. */
async function user(): Promise<CliUser> {
  if (!shared) {
    shared = await signedUpUser(stack.url);
    await newSession(shared);
  }
  return shared;
}

test('files create takes the content from --content, a local file, or standard input', async () => {
  const u = await user();
  assert.equal(ok(await u.run(['files', 'create', 'c/one.txt', '--content', 'one\n'])), 'Created /workspace/c/one.txt (4 B)\n');
  const local = join(tempHome(), 'local.bin');
  const binary = randomBytes(300);
  writeFileSync(local, binary);
  const written = json(await u.run(['files', 'create', 'c/two.bin', '--from', local, '--json']));
  assert.deepEqual(written, { path: '/workspace/c/two.bin', size: 300, overwritten: false });
  ok(await u.run(['files', 'create', 'c/three.txt'], { input: 'from stdin\n' }));

  assert.equal(ok(await u.run(['files', 'view', 'c/one.txt'])), 'one\n');
  assert.equal(ok(await u.run(['files', 'view', '/workspace/c/three.txt'])), 'from stdin\n');
  // Binary content comes back byte for byte.
  assert.equal(ok(await u.run(['exec', '--', 'sha256sum', 'c/two.bin'])).split(' ')[0], (await import('node:crypto')).createHash('sha256').update(binary).digest('hex'));
  assert.equal(ok(await u.run(['files', 'create', 'c/one.txt', '--content', 'uno\n'])), 'Replaced /workspace/c/one.txt (4 B)\n');
});

test('files create: --no-overwrite, and both sources at once, fail with what to do', async () => {
  const u = await user();
  ok(await u.run(['files', 'create', 'keep.txt', '--content', 'kept']));
  const r = await u.run(['files', 'create', 'keep.txt', '--content', 'lost', '--no-overwrite']);
  failsWith(r, 'file_exists', 1);
  assert.match(r.stderr, /Hint: /);
  assert.equal(ok(await u.run(['files', 'view', 'keep.txt'])), 'kept');
  const both = await u.run(['files', 'create', 'x.txt', '--content', 'a', '--from', '/etc/hostname']);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--content or --from, not both/);
});

test('files view prints lines, a range with --start and --end, and --json the API answer', async () => {
  const u = await user();
  ok(await u.run(['files', 'create', 'lines.txt'], { input: 'l1\nl2\nl3\nl4\n' }));
  const r = await u.run(['files', 'view', 'lines.txt', '--start', '2', '--end', '3']);
  assert.equal(ok(r), 'l2\nl3\n');
  assert.match(r.stderr, /lines 2-3 of 4: more with --start 4/);
  const v = json(await u.run(['files', 'view', 'lines.txt', '--json']));
  assert.equal(v.totalLines, 4);
  assert.equal(v.content, 'l1\nl2\nl3\nl4\n');
  failsWith(await u.run(['files', 'view', 'nope.txt']), 'file_not_found', 1);
  const zero = await u.run(['files', 'view', 'lines.txt', '--start', '0']);
  assert.equal(zero.code, 2);
  assert.match(zero.stderr, /--start <line>.*must be a whole number/);
});

test('files edit replaces exact text, with errors that say what to do', async () => {
  const u = await user();
  ok(await u.run(['files', 'create', 'edit.txt', '--content', 'a b a b\n']));
  const none = await u.run(['files', 'edit', 'edit.txt', '--old', 'zzz', '--new', 'y']);
  failsWith(none, 'edit_no_match', 1);
  const twice = await u.run(['files', 'edit', 'edit.txt', '--old', 'a', '--new', 'y']);
  failsWith(twice, 'edit_ambiguous', 1);
  assert.match(twice.stderr, /--all/);
  assert.equal(ok(await u.run(['files', 'edit', 'edit.txt', '--old', 'a b a', '--new', 'c'])), '1 replacement in /workspace/edit.txt\n');
  assert.deepEqual(json(await u.run(['files', 'edit', 'edit.txt', '--old', 'b', '--new', 'd', '--all', '--json'])), {
    path: '/workspace/edit.txt',
    replacements: 1,
  });
  assert.equal(ok(await u.run(['files', 'view', 'edit.txt'])), 'c d\n');
});

test('files ls, glob and grep', async () => {
  const u = await user();
  ok(await u.run(['files', 'create', 'tree/src/main.py', '--content', 'print("Hello")\nx = 1\n']));
  ok(await u.run(['files', 'create', 'tree/src/util.py', '--content', 'def hello():\n    pass\n']));
  ok(await u.run(['files', 'create', 'tree/README.md', '--content', 'hello readme\n']));

  const ls = ok(await u.run(['files', 'ls', 'tree']));
  assert.match(ls, /^TYPE +SIZE +MODIFIED +NAME$/m);
  assert.match(ls, /^dir +\d+ +\S+ +src\/$/m);
  assert.match(ls, /^file +13 +\S+ +README\.md$/m);
  const listing = json(await u.run(['files', 'ls', 'tree/src', '--json']));
  assert.deepEqual(listing.entries.map((e: { name: string }) => e.name).sort(), ['main.py', 'util.py']);

  assert.equal(ok(await u.run(['files', 'glob', '**/*.py', '--path', 'tree'])), '/workspace/tree/src/main.py\n/workspace/tree/src/util.py\n');
  assert.deepEqual(json(await u.run(['files', 'glob', 'tree/*.md', '--json'])).matches, ['/workspace/tree/README.md']);

  const grep = ok(await u.run(['files', 'grep', 'hello', '--path', 'tree', '-i', '--glob', '**/*.py']));
  assert.deepEqual(grep.trimEnd().split('\n').sort(), ['/workspace/tree/src/main.py:1:print("Hello")', '/workspace/tree/src/util.py:1:def hello():']);
  const g = json(await u.run(['files', 'grep', 'readme', '--path', 'tree', '--json']));
  assert.deepEqual(g.matches, [{ path: '/workspace/tree/README.md', line: 1, text: 'hello readme' }]);
});

test('files create from a local file that cannot be read fails before any request', async () => {
  const u = await user();
  const r = await u.run(['files', 'create', 'x.txt', '--from', '/does/not/exist']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Cannot read \/does\/not\/exist/);
  failsWith(await u.run(['files', 'view', 'x.txt']), 'file_not_found', 1);
});
