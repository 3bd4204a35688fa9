import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { failsWith, json, newSession, ok, signedUpUser, tempHome, type CliUser } from './cli-helpers.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

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
  assert.match(r.stderr, /already exists; leave out --no-overwrite to replace it/);
  assert.doesNotMatch(r.stderr, /=true/, 'no API parameter in a flag\'s clothes');
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
  // The API's query.startLine and endLine are --start and --end here.
  const past = await u.run(['files', 'view', 'lines.txt', '--start', '9']);
  failsWith(past, 'invalid_request', 1);
  assert.match(past.stderr, /^Error: --start: the file has 4 lines\./m);
  const backwards = await u.run(['files', 'view', 'lines.txt', '--start', '3', '--end', '2']);
  assert.match(backwards.stderr, /^Error: --end: must not be less than --start \(3\)\./m);
  assert.ok(!/startLine|endLine|query\./.test(past.stderr + backwards.stderr));
  const zero = await u.run(['files', 'view', 'lines.txt', '--start', '0']);
  assert.equal(zero.code, 2);
  assert.match(zero.stderr, /--start <line>.*must be a whole number/);
});

test('files edit replaces exact text, with errors that say what to do', async () => {
  const u = await user();
  ok(await u.run(['files', 'create', 'edit.txt', '--content', 'a b a b\n']));
  const none = await u.run(['files', 'edit', 'edit.txt', '--old', 'zzz', '--new', 'y']);
  failsWith(none, 'edit_no_match', 1);
  assert.match(none.stderr, /^Error: --old does not occur in "\/workspace\/edit\.txt"\./m);
  const twice = await u.run(['files', 'edit', 'edit.txt', '--old', 'a', '--new', 'y']);
  failsWith(twice, 'edit_ambiguous', 1);
  assert.match(twice.stderr, /^Error: --old occurs more than once in .*; give more context or set --all\./m);
  assert.ok(!/oldText|replaceAll/.test(none.stderr + twice.stderr));
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

  // Exit codes as grep's: 0 a match, 1 none, 2 trouble.
  const none = await u.run(['files', 'grep', 'no such text anywhere', '--path', 'tree']);
  assert.equal(none.code, 1, none.stderr);
  assert.equal(none.stdout, '');
  assert.match(none.stderr, /No matches\./);
  const noneJson = await u.run(['files', 'grep', 'no such text anywhere', '--path', 'tree', '--json']);
  assert.equal(noneJson.code, 1);
  assert.deepEqual(JSON.parse(noneJson.stdout).matches, []);
  const missing = await u.run(['files', 'grep', 'hello', '--path', 'no/such/dir']);
  assert.equal(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, /^Error: .*\[file_not_found\]/m);
  const badPattern = await u.run(['files', 'grep', '(unclosed', '--path', 'tree']);
  assert.equal(badPattern.code, 2, badPattern.stderr);
});

test('files create from a local file that cannot be read fails before any request', async () => {
  const u = await user();
  const r = await u.run(['files', 'create', 'x.txt', '--from', '/does/not/exist']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Cannot read \/does\/not\/exist/);
  failsWith(await u.run(['files', 'view', 'x.txt']), 'file_not_found', 1);
});

test('files upload sends a local tree, leaving out what git ignores unless --no-gitignore; files download saves it back, tar.gz by its name', async () => {
  const u = await user();
  const { mkdirSync, readFileSync, existsSync } = await import('node:fs');
  const { spawnSync } = await import('node:child_process');
  const tree = join(tempHome(), 'project');
  mkdirSync(join(tree, 'sub'), { recursive: true });
  writeFileSync(join(tree, 'a.txt'), 'a\n');
  writeFileSync(join(tree, 'sub/b.txt'), 'b\n');
  writeFileSync(join(tree, 'debug.log'), 'ignored\n');
  // git's rules, which GNU tar's --exclude-vcs-ignores does not all follow: a directory pattern,
  // and one anchored at the .gitignore's own folder.
  for (const dir of ['node_modules/x', 'build', 'sub/build']) mkdirSync(join(tree, dir), { recursive: true });
  writeFileSync(join(tree, 'node_modules/x/f.js'), 'ignored\n');
  writeFileSync(join(tree, 'build/out.bin'), 'ignored\n');
  writeFileSync(join(tree, 'sub/build/keep.txt'), 'kept: /build/ is anchored\n');
  writeFileSync(join(tree, '.gitignore'), '*.log\nnode_modules/\n/build/\n');
  const listing = async (dir: string) => ok(await u.run(['exec', '--', 'sh', '-c', `cd ${dir} && find . -mindepth 1 -not -path "./.git/*" | sort`]));

  // Not a git work tree: .gitignore files are honoured all the same.
  const plain = json(await u.run(['files', 'upload', tree, 'up/plain', '--json']));
  assert.equal(plain.path, '/workspace/up/plain');
  const kept = './.gitignore\n./a.txt\n./sub\n./sub/b.txt\n./sub/build\n./sub/build/keep.txt\n';
  assert.equal(await listing('up/plain'), kept);

  assert.equal(spawnSync('git', ['init', '-q', tree]).status, 0);
  const viaGit = await u.run(['files', 'upload', tree, 'up/git', '--gzip']);
  assert.match(ok(viaGit), /^Extracted \d+ entries into \/workspace\/up\/git \(.+ sent\)\n$/);
  assert.equal(await listing('up/git'), kept);

  ok(await u.run(['files', 'upload', tree, 'up/all', '--no-gitignore']));
  assert.match(await listing('up/all'), /\.\/\.git\n[^]*\.\/debug\.log\n/);

  const saved = join(tempHome(), 'back.tgz');
  assert.match(ok(await u.run(['files', 'download', 'up/git', '-o', saved])), /^Saved .*back\.tgz \(.+\)\n$/);
  assert.deepEqual(readFileSync(saved).subarray(0, 2), Buffer.from([0x1f, 0x8b]));
  const names = spawnSync('tar', ['-tzf', saved], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).sort();
  assert.deepEqual(names, ['./', './.gitignore', './a.txt', './sub/', './sub/b.txt', './sub/build/', './sub/build/keep.txt']);
  assert.ok(!existsSync(`${saved}.part`));

  const piped = await u.run(['files', 'download', 'up/git/a.txt', '-o', '-']);
  assert.equal(piped.code, 0, piped.stderr);
  assert.match(piped.stdout, /^a\.txt\0/);
  assert.match(piped.stdout, /ustar/);
  failsWith(await u.run(['files', 'download', 'up/none', '-o', join(tempHome(), 'none.tar')]), 'file_not_found', 1);
  assert.match(ok(await u.run(['files', 'upload', '--help'])), /\.gitignore is honoured[^]*--no-gitignore/);
});

test('files put streams a local file or standard input; cat, stat, mkdir, mv and rm', async () => {
  const u = await user();
  const local = join(tempHome(), 'put.txt');
  writeFileSync(local, 'from a local file\n');
  assert.equal(ok(await u.run(['files', 'put', 'raw/a.txt', local])), 'Created /workspace/raw/a.txt (18 B)\n');
  assert.equal(json(await u.run(['files', 'put', 'raw/b.txt', '--json'], { input: '0123456789' })).size, 10);
  assert.equal(ok(await u.run(['files', 'cat', 'raw/b.txt', '--start', '2', '--end', '4'])), '234');
  assert.equal(ok(await u.run(['files', 'mkdir', 'raw/dir/deep'])), '/workspace/raw/dir/deep\n');
  assert.equal(ok(await u.run(['files', 'mv', 'raw/a.txt', 'raw/dir/deep/a.txt'])), 'Moved raw/a.txt to /workspace/raw/dir/deep/a.txt\n');
  const st = json(await u.run(['files', 'stat', 'raw/dir/deep/a.txt', '--json']));
  assert.deepEqual([st.type, st.size], ['file', 18]);
  failsWith(await u.run(['files', 'rm', 'raw/dir']), 'directory_not_empty', 1);
  const rm = await u.run(['files', 'rm', '-r', 'raw/dir']);
  assert.equal(rm.code, 0, rm.stderr);
  assert.equal(rm.stdout, '');
});
