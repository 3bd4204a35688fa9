import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { sandboxFor } from './helpers.ts';
import { selectLines } from '../../api/services/files/view.ts';

const stack = await startSandboxStack();
const account = await newAccount(stack.url);
const box = await sandboxFor(stack, account.key);

test('text round-trips byte for byte, multi-byte UTF-8 and a BOM included', async () => {
  const content = '\uFEFFhéllo 日本 🦊\nsecond line\r\n\tthird\n';
  const put = await box.put('notes/utf8.txt', { content });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  assert.deepEqual(put.body, { path: '/workspace/notes/utf8.txt', size: Buffer.byteLength(content), overwritten: false });

  const view = await box.view('notes/utf8.txt');
  assert.equal(view.status, 200, JSON.stringify(view.body));
  assert.equal(view.body.content, content);
  assert.equal(view.body.encoding, 'utf-8');
  assert.equal(view.body.contentBase64, undefined);
  assert.deepEqual([view.body.startLine, view.body.endLine, view.body.totalLines, view.body.truncated], [1, 3, 3, false]);
  assert.equal(view.body.size, Buffer.byteLength(content));
  // What the sandbox holds is the UTF-8 encoding itself.
  const onDisk = await box.sh('base64 -w0 /workspace/notes/utf8.txt');
  assert.equal(onDisk.stdout, Buffer.from(content, 'utf8').toString('base64'));

  const b64 = await box.view('notes/utf8.txt', { encoding: 'base64' });
  assert.equal(b64.body.encoding, 'base64');
  assert.equal(Buffer.from(b64.body.contentBase64, 'base64').toString('utf8'), content);
});

test('binary content (all 256 byte values) round-trips as base64', async () => {
  const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const put = await box.put('/workspace/bin/all.bin', { contentBase64: bytes.toString('base64') });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  assert.equal(put.body.size, 256);
  const view = await box.view('bin/all.bin');
  assert.equal(view.status, 200);
  assert.equal(view.body.encoding, 'base64');
  assert.equal(view.body.content, undefined);
  assert.deepEqual(Buffer.from(view.body.contentBase64, 'base64'), bytes);
  assert.equal(view.body.totalLines, 2, 'byte 10 ends the first line');
  const sum = await box.sh('od -An -v -tx1 /workspace/bin/all.bin | tr -d " \\n"');
  assert.equal(sum.stdout, bytes.toString('hex'));
  // Forced text replaces what is not UTF-8.
  const lossy = await box.view('bin/all.bin', { encoding: 'utf-8' });
  assert.equal(lossy.body.encoding, 'utf-8');
  assert.match(lossy.body.content, /\uFFFD/);
  // An empty file.
  assert.equal((await box.put('bin/empty', { contentBase64: '' })).status, 201);
  const empty = await box.view('bin/empty');
  assert.deepEqual([empty.body.content, empty.body.totalLines, empty.body.endLine, empty.body.size], ['', 0, 0, 0]);
});

test('line ranges are 1-based and inclusive; endLine past the end is clamped', async () => {
  await box.put('lines.txt', { content: 'l1\nl2\nl3\nl4\nl5' });
  const mid = await box.view('lines.txt', { startLine: '2', endLine: '3' });
  assert.deepEqual(
    [mid.body.content, mid.body.startLine, mid.body.endLine, mid.body.totalLines, mid.body.truncated],
    ['l2\nl3\n', 2, 3, 5, true],
  );
  const tail = await box.view('lines.txt', { startLine: '4', endLine: '99' });
  assert.deepEqual([tail.body.content, tail.body.endLine, tail.body.truncated], ['l4\nl5', 5, false]);
  const from = await box.view('lines.txt', { startLine: '5' });
  assert.equal(from.body.content, 'l5');
  assertProblem(await box.view('lines.txt', { startLine: '6' }), 400, 'invalid_request');
  assertProblem(await box.view('lines.txt', { startLine: '3', endLine: '2' }), 400, 'invalid_request');
  assertProblem(await box.view('lines.txt', { startLine: '0' }), 400, 'invalid_request');
  assertProblem(await box.view('lines.txt', { startLine: 'x' }), 400, 'invalid_request');
});

test('a range is cut in the sandbox exactly as the whole file would be cut: lines, counts and bytes, for awkward files', async () => {
  // selectLines over the whole file is the oracle: the route cuts a range in the sandbox instead.
  const files: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['one', Buffer.from('a')],
    ['one-nl', Buffer.from('a\n')],
    ['newlines', Buffer.from('\n\n\n')],
    ['no-final-nl', Buffer.from('x\ny\nz')],
    ['crlf', Buffer.from('r1\r\nr2\r\n\r\nr4')],
    ['nul-last', Buffer.from([0x61, 0x0a, 0x00])],
    ['binary', Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 37) % 256))],
  ];
  for (const [name, bytes] of files) {
    assert.equal((await box.put(`ranges/${name}`, { contentBase64: bytes.toString('base64') })).status, 201);
    const total = selectLines(bytes).totalLines;
    const ranges: [number, number | undefined][] = [[1, 1], [1, undefined], [2, undefined], [2, 3], [Math.max(total, 1), undefined], [1, total + 5], [Math.max(total, 1), total + 1]];
    for (const [startLine, endLine] of ranges) {
      const query = { startLine: String(startLine), ...(endLine === undefined ? {} : { endLine: String(endLine) }), encoding: 'base64' };
      const view = await box.view(`ranges/${name}`, query);
      const where = `${name} ${startLine}..${endLine ?? 'end'}`;
      let expected;
      try {
        expected = selectLines(bytes, startLine, endLine);
      } catch {
        assertProblem(view, 400, 'invalid_request');
        continue;
      }
      assert.equal(view.status, 200, `${where}: ${JSON.stringify(view.body)}`);
      assert.deepEqual(Buffer.from(view.body.contentBase64, 'base64'), expected.bytes, where);
      assert.deepEqual(
        [view.body.startLine, view.body.endLine, view.body.totalLines, view.body.truncated, view.body.size],
        [expected.startLine, expected.endLine, expected.totalLines, expected.endLine < expected.totalLines, bytes.length],
        where,
      );
    }
  }
});

test('relative paths are relative to /workspace; absolute paths are taken as they are', async () => {
  const put = await box.put('./rel/../rel/a.txt', { content: 'relative' });
  assert.equal(put.body.path, '/workspace/rel/a.txt');
  assert.equal((await box.view('/workspace/rel/a.txt')).body.content, 'relative');
  assert.equal((await box.view('rel//a.txt')).body.path, '/workspace/rel/a.txt');
  const tmp = await box.put('/tmp/deep/er/abs.txt', { content: 'absolute' });
  assert.equal(tmp.status, 201, JSON.stringify(tmp.body));
  assert.equal((await box.sh('cat /tmp/deep/er/abs.txt')).stdout, 'absolute');
  assert.equal((await box.view('../tmp/deep/er/abs.txt')).body.content, 'absolute');
});

test('create: overwrite by default keeps the mode; overwrite=false answers file_exists', async () => {
  await box.put('ow.sh', { content: 'v1' });
  await box.sh('chmod 750 /workspace/ow.sh');
  const again = await box.put('ow.sh', { content: 'v2' });
  assert.equal(again.status, 201);
  assert.equal(again.body.overwritten, true);
  assert.equal((await box.sh('stat -c %a /workspace/ow.sh')).stdout.trim(), '750');
  assert.equal((await box.view('ow.sh')).body.content, 'v2');
  assertProblem(await box.put('ow.sh', { content: 'v3' }, { overwrite: 'false' }), 409, 'file_exists');
  assert.equal((await box.view('ow.sh')).body.content, 'v2');
  const fresh = await box.put('ow-new.txt', { content: 'new' }, { overwrite: 'false' });
  assert.equal(fresh.status, 201);
  assert.equal((await box.sh('stat -c %a /workspace/ow-new.txt')).stdout.trim(), '644');
  // No temporary file is left behind.
  assert.equal((await box.sh('ls -A /workspace | grep -c paddock-write || true')).stdout.trim(), '0');
});

test('every file error has its code', async () => {
  await box.put('errs/file.txt', { content: 'x' });
  assertProblem(await box.view('errs/missing.txt'), 404, 'file_not_found');
  assertProblem(await box.view('errs/nodir/missing.txt'), 404, 'file_not_found');
  assertProblem(await box.view('errs'), 409, 'is_a_directory');
  assertProblem(await box.view('errs/file.txt/x'), 409, 'not_a_directory');
  assertProblem(await box.put('errs/file.txt/x/y.txt', { content: 'x' }), 409, 'not_a_directory');
  assertProblem(await box.put('errs', { content: 'x' }), 409, 'is_a_directory');
  assertProblem(await box.files('PATCH', '', { path: 'errs/missing.txt' }, { oldText: 'a', newText: 'b' }), 404, 'file_not_found');
  assertProblem(await box.files('PATCH', '', { path: 'errs' }, { oldText: 'a', newText: 'b' }), 409, 'is_a_directory');
  // The sandbox user cannot write the read-only system directories.
  const ro = await box.put('/usr/paddock-test.txt', { content: 'x' });
  assertProblem(ro, 403, 'permission_denied');
  // A FIFO would block a reader forever.
  await box.sh('mkfifo /workspace/errs/fifo');
  const fifo = await box.view('errs/fifo');
  assertProblem(fifo, 409, 'not_a_regular_file');
  // Bad input.
  assertProblem(await box.view('a\0b'), 400, 'invalid_request');
  assertProblem(await box.view('x'.repeat(5000)), 400, 'invalid_request');
  assertProblem(await box.files('GET', '', {}), 400, 'invalid_request');
  assertProblem(await box.put('errs/both', { content: 'a', contentBase64: 'YQ==' }), 400, 'invalid_request');
  assertProblem(await box.put('errs/neither', {}), 400, 'invalid_request');
  assertProblem(await box.put('errs/bad64', { contentBase64: 'not base64!' }), 400, 'invalid_request');
  assertProblem(await box.put('errs/extra', { content: 'a', mode: 755 }), 400, 'invalid_request');
  assertProblem(await box.put('errs/lone', '{"content":"\\ud800"}'), 400, 'invalid_request');
});

test('edit replaces one exact occurrence, refuses none and several, and replaceAll replaces every one', async () => {
  await box.put('edit.txt', { content: 'alpha beta\nbeta gamma\nδέλτα 日本\n' });
  await box.sh('chmod 600 /workspace/edit.txt');
  const edit = (body: object) => box.files('PATCH', '', { path: 'edit.txt' }, body);

  const one = await edit({ oldText: 'δέλτα 日本', newText: 'delta 🦊' });
  assert.equal(one.status, 200, JSON.stringify(one.body));
  assert.deepEqual(one.body, { path: '/workspace/edit.txt', replacements: 1 });
  assert.equal((await box.view('edit.txt')).body.content, 'alpha beta\nbeta gamma\ndelta 🦊\n');
  assert.equal((await box.sh('stat -c %a /workspace/edit.txt')).stdout.trim(), '600', 'the mode is kept');

  assertProblem(await edit({ oldText: 'omega', newText: 'x' }), 422, 'edit_no_match');
  const ambiguous = await edit({ oldText: 'beta', newText: 'BETA' });
  assertProblem(ambiguous, 422, 'edit_ambiguous');
  assert.equal(ambiguous.body.occurrences, 2);
  assert.equal((await box.view('edit.txt')).body.content, 'alpha beta\nbeta gamma\ndelta 🦊\n', 'nothing changed');

  const all = await edit({ oldText: 'beta', newText: 'BETA', replaceAll: true });
  assert.deepEqual(all.body, { path: '/workspace/edit.txt', replacements: 2 });
  assert.equal((await box.view('edit.txt')).body.content, 'alpha BETA\nBETA gamma\ndelta 🦊\n');

  const multiline = await edit({ oldText: 'BETA\nBETA', newText: '' });
  assert.equal(multiline.body.replacements, 1);
  assert.equal((await box.view('edit.txt')).body.content, 'alpha  gamma\ndelta 🦊\n');
  assertProblem(await edit({ oldText: '', newText: 'x' }), 400, 'invalid_request');
  assertProblem(await edit({ oldText: 'a', newText: 'b', replaceAll: 'yes' }), 400, 'invalid_request');
});

test('ls lists files, directories and symlinks (not followed) with sizes and times, sorted', async () => {
  await box.put('lsdir/file.txt', { content: '12345' });
  await box.sh('cd /workspace/lsdir && mkdir sub && ln -s file.txt link && ln -s / rootlink && touch .hidden "with space"');
  const res = await box.files('GET', '/ls', { path: 'lsdir' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.path, '/workspace/lsdir');
  assert.equal(res.body.truncated, false);
  const byName = Object.fromEntries(res.body.entries.map((e: any) => [e.name, e]));
  assert.deepEqual(res.body.entries.map((e: any) => e.name), ['.hidden', 'file.txt', 'link', 'rootlink', 'sub', 'with space']);
  assert.equal(byName['file.txt'].type, 'file');
  assert.equal(byName['file.txt'].size, 5);
  assert.equal(byName.sub.type, 'dir');
  assert.equal(byName.link.type, 'symlink');
  assert.equal(byName.link.size, 'file.txt'.length);
  assert.equal(byName.rootlink.type, 'symlink');
  assert.ok(Math.abs(Date.parse(byName['file.txt'].modifiedAt) - Date.now()) < 120_000, byName['file.txt'].modifiedAt);
  assert.match(byName['file.txt'].modifiedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  const defaultPath = await box.files('GET', '/ls', {});
  assert.equal(defaultPath.body.path, '/workspace');
  assert.ok(defaultPath.body.entries.some((e: any) => e.name === 'lsdir' && e.type === 'dir'));
  // Through a symlink to a directory, the directory's entries.
  const through = await box.files('GET', '/ls', { path: 'lsdir/rootlink/workspace/lsdir' });
  assert.equal(through.body.entries.length, 6);
  assertProblem(await box.files('GET', '/ls', { path: 'lsdir/file.txt' }), 409, 'not_a_directory');
  assertProblem(await box.files('GET', '/ls', { path: 'lsdir/nope' }), 404, 'file_not_found');

  await box.sh('mkdir /workspace/many && cd /workspace/many && i=0; while [ $i -lt 1005 ]; do : > f$i; i=$((i+1)); done');
  const many = await box.files('GET', '/ls', { path: 'many' });
  assert.equal(many.body.entries.length, 1000);
  assert.equal(many.body.truncated, true);
});

test('glob matches with *, ?, […], {…} and ** across directories, hidden names only when asked', async () => {
  await box.sh(
    'mkdir -p /workspace/g/sub/deep /workspace/g/.hidden && cd /workspace/g && ' +
      'touch a.ts b.js c.txt sub/c.ts sub/deep/d.ts sub/.e.ts .hidden/f.ts "sub/deep/日本.ts"',
  );
  const glob = async (query: Record<string, string>) => {
    const res = await box.files('GET', '/glob', query);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  const all = await glob({ pattern: '**/*.ts', path: 'g' });
  assert.deepEqual(all, {
    pattern: '**/*.ts',
    matches: ['/workspace/g/a.ts', '/workspace/g/sub/c.ts', '/workspace/g/sub/deep/d.ts', '/workspace/g/sub/deep/日本.ts'],
    truncated: false,
  });
  assert.deepEqual((await glob({ pattern: 'g/*.ts' })).matches, ['/workspace/g/a.ts']);
  assert.deepEqual((await glob({ pattern: 'g/*.{ts,js}' })).matches, ['/workspace/g/a.ts', '/workspace/g/b.js']);
  assert.deepEqual((await glob({ pattern: 'g/su?/[b-c].ts' })).matches, ['/workspace/g/sub/c.ts']);
  assert.deepEqual((await glob({ pattern: '/workspace/g/sub/deep/?.ts' })).matches, ['/workspace/g/sub/deep/d.ts']);
  assert.deepEqual((await glob({ pattern: 'g/**/.*.ts' })).matches, ['/workspace/g/sub/.e.ts']);
  assert.deepEqual((await glob({ pattern: 'g/.hidden/*' })).matches, ['/workspace/g/.hidden/f.ts']);
  assert.deepEqual((await glob({ pattern: 'g/sub/**' })).matches, [
    '/workspace/g/sub/c.ts',
    '/workspace/g/sub/deep',
    '/workspace/g/sub/deep/d.ts',
    '/workspace/g/sub/deep/日本.ts',
  ]);
  assert.deepEqual((await glob({ pattern: 'nowhere/**' })).matches, []);
  assertProblem(await box.files('GET', '/glob', { pattern: '*', path: 'g/missing' }), 404, 'file_not_found');
  assertProblem(await box.files('GET', '/glob', { pattern: '*', path: 'g/a.ts' }), 409, 'not_a_directory');
  assertProblem(await box.files('GET', '/glob', { pattern: '' }), 400, 'invalid_request');

  await box.sh('mkdir -p /workspace/gmany/x && cd /workspace/gmany/x && i=0; while [ $i -lt 1100 ]; do : > f$i.txt; i=$((i+1)); done');
  const capped = await glob({ pattern: 'gmany/**/*.txt' });
  assert.equal(capped.matches.length, 1000);
  assert.equal(capped.truncated, true);
});

test('grep finds regular-expression matches with line numbers, filtered by a glob, and is capped', async () => {
  await box.sh(
    'mkdir -p /workspace/s/lib /workspace/s/.git && cd /workspace/s && ' +
      'printf "one\\nfoobar here\\nthree\\nFOOBAZ\\n" > a.py && printf "foobaz\\n" > lib/b.py && ' +
      'printf "foobar\\n" > lib/c.ts && printf "foobar\\n" > .git/d.py && printf "foobar\\000binary\\n" > bin.py && ' +
      'printf "日本 foobar 🦊\\n" > lib/utf8.py',
  );
  const grep = async (query: Record<string, string>) => {
    const res = await box.files('GET', '/grep', query);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  const re = await grep({ pattern: 'fo+ba[rz]', path: 's', glob: '**/*.py' });
  assert.deepEqual(re, {
    pattern: 'fo+ba[rz]',
    matches: [
      { path: '/workspace/s/a.py', line: 2, text: 'foobar here' },
      { path: '/workspace/s/lib/b.py', line: 1, text: 'foobaz' },
      { path: '/workspace/s/lib/utf8.py', line: 1, text: '日本 foobar 🦊' },
    ],
    truncated: false,
  });
  const everything = await grep({ pattern: 'foobar', path: 's' });
  assert.deepEqual(
    everything.matches.map((m: any) => m.path),
    ['/workspace/s/.git/d.py', '/workspace/s/a.py', '/workspace/s/lib/c.ts', '/workspace/s/lib/utf8.py'],
    'without a glob every text file is searched; binary files are skipped',
  );
  const icase = await grep({ pattern: 'foobaz$', path: 's/a.py', ignoreCase: 'true' });
  assert.deepEqual(icase.matches, [{ path: '/workspace/s/a.py', line: 4, text: 'FOOBAZ' }]);
  assert.deepEqual((await grep({ pattern: '^-e$', path: 's' })).matches, [], 'a pattern that looks like an option is a pattern');
  assert.deepEqual((await grep({ pattern: 'x', path: 's', glob: 'nowhere/*.py' })).matches, []);

  const gnu = await grep({ pattern: '^foo\\w+$', path: 's/lib' });
  assert.deepEqual(gnu.matches.map((m: any) => m.text), ['foobaz', 'foobar'], "GNU ERE's \\w");
  const perl = await box.files('GET', '/grep', { pattern: 'match \\d+', path: 's' });
  assertProblem(perl, 400, 'invalid_request');
  assert.match(perl.body.detail, /\[0-9\]/);
  assertProblem(await box.files('GET', '/grep', { pattern: '(unclosed', path: 's' }), 400, 'invalid_request');
  assertProblem(await box.files('GET', '/grep', { pattern: 'a\nb', path: 's' }), 400, 'invalid_request');
  assertProblem(await box.files('GET', '/grep', { pattern: 'x', path: 's/missing' }), 404, 'file_not_found');

  await box.sh('i=0; while [ $i -lt 1200 ]; do echo "match $i"; i=$((i+1)); done > /workspace/s/many.txt');
  const capped = await grep({ pattern: 'match [0-9]+', path: 's' });
  assert.equal(capped.matches.length, 1000);
  assert.equal(capped.truncated, true);
  assert.deepEqual(capped.matches[0], { path: '/workspace/s/many.txt', line: 1, text: 'match 0' });
});

test('.. resolves inside the sandbox: /etc/passwd is the sandbox\'s own, not the host\'s', async () => {
  const res = await box.view('../../etc/passwd');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.path, '/etc/passwd');
  assert.match(res.body.content, /^sandbox:x:1000:1000:/m, 'the passwd the runtime generates');
  const host = readFileSync('/etc/passwd', 'utf8');
  assert.notEqual(res.body.content, host);
  for (const line of host.split('\n').filter((l) => l && !l.startsWith('root:') && !l.startsWith('nobody:'))) {
    assert.ok(!res.body.content.includes(line), `a host passwd line is visible: ${line}`);
  }
  assertProblem(await box.view('/etc/shadow'), 404, 'file_not_found');
  assertProblem(await box.view('../../../../../root/.bashrc'), 404, 'file_not_found');
});

test('a symlink planted in the sandbox resolves in the sandbox: nothing of the host is reachable', async () => {
  const marker = `paddock-escape-${process.pid}-${Date.now()}`;
  await box.sh(`ln -s / /workspace/root && ln -s /work /workspace/hostwork && ln -s /tmp/${marker} /workspace/out`);
  assertProblem(await box.view('root/etc/shadow'), 404, 'file_not_found');
  assertProblem(await box.view('root/root'), 404, 'file_not_found');
  assertProblem(await box.files('GET', '/ls', { path: 'root/root' }), 404, 'file_not_found');
  assertProblem(await box.files('GET', '/ls', { path: 'hostwork' }), 404, 'file_not_found');
  assert.match((await box.view('root/etc/passwd')).body.content, /^sandbox:x:1000:1000:/m);

  const top = await box.files('GET', '/ls', { path: 'root' });
  assert.equal(top.status, 200);
  const names = top.body.entries.map((e: any) => e.name);
  assert.ok(names.includes('workspace'), names.join());
  for (const hostOnly of ['root', 'home', 'work', 'srv', 'boot']) assert.ok(!names.includes(hostOnly), `${hostOnly} in ${names.join()}`);

  // Writing through a link to a host path writes in the sandbox (its /tmp), never on the host.
  const put = await box.put('out', { content: 'inside' });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  assert.equal((await box.sh(`cat /tmp/${marker}`)).stdout, 'inside');
  assert.throws(() => readFileSync(`/tmp/${marker}`), /ENOENT/);

  // A walk does not follow links below where it starts; a path that names the link goes through
  // it, and lands in the sandbox.
  const walked = await box.files('GET', '/glob', { pattern: '**/passwd' });
  assert.deepEqual(walked.body.matches, []);
  const named = await box.files('GET', '/glob', { pattern: 'root/etc/pass*' });
  assert.deepEqual(named.body.matches, ['/workspace/root/etc/passwd']);
  const grepped = await box.files('GET', '/grep', { pattern: '^[a-z]+:x:0:', path: 'root/etc', glob: 'passwd' });
  assert.deepEqual(
    grepped.body.matches.map((m: any) => m.text),
    ['root:x:0:0:root:/root:/usr/sbin/nologin'],
    'the sandbox passwd, whose root has no shell',
  );
});

test('a reader never sees half a file while it is being replaced', async () => {
  const size = 512 * 1024;
  const a = 'a'.repeat(size);
  const b = 'b'.repeat(size);
  await box.put('atomic.txt', { content: a });
  const writes = (async () => {
    for (let i = 0; i < 8; i++) assert.equal((await box.put('atomic.txt', { content: i % 2 ? a : b })).status, 201);
  })();
  const reads = (async () => {
    for (let i = 0; i < 8; i++) {
      const res = await box.view('atomic.txt');
      assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 300));
      assert.ok(res.body.content === a || res.body.content === b, `a mixed or partial file of ${res.body.size} bytes`);
    }
  })();
  await Promise.all([writes, reads]);
});

test("another account's sandbox, or an unknown id, answers 404 on every file route", async () => {
  const other = await newAccount(stack.url);
  const routes: [string, string, Record<string, string>, unknown?][] = [
    ['GET', '', { path: 'notes/utf8.txt' }],
    ['PUT', '', { path: 'x.txt' }, { content: 'x' }],
    ['PATCH', '', { path: 'notes/utf8.txt' }, { oldText: 'h', newText: 'j' }],
    ['GET', '/ls', { path: '.' }],
    ['GET', '/glob', { pattern: '**' }],
    ['GET', '/grep', { pattern: 'h' }],
  ];
  for (const [method, sub, query, body] of routes) {
    for (const id of [box.id, `sbx_${'0'.repeat(24)}`]) {
      const res = await call(stack.url, method, `/v1/sandboxes/${id}/files${sub}?${new URLSearchParams(query)}`, {
        token: other.key,
        ...(body !== undefined ? { body } : {}),
      });
      assertProblem(res, 404, 'sandbox_not_found');
    }
  }
  assert.equal((await box.sh('test -e /workspace/x.txt; echo $?')).stdout.trim(), '1', 'nothing was written');
  assert.equal((await box.view('notes/utf8.txt')).body.content.includes('héllo'), true, 'nothing was edited');
  assertProblem(await call(stack.url, 'GET', `/v1/sandboxes/${box.id}/files?path=x`), 401, 'missing_credential');
});

test('a sandbox that is not running answers 409 sandbox_not_running', async () => {
  const owner = await newAccount(stack.url);
  const gone = await sandboxFor(stack, owner.key);
  const del = await call(stack.url, 'DELETE', `/v1/sandboxes/${gone.id}`, { token: owner.key });
  assert.equal(del.body.state, 'destroyed');
  assertProblem(await gone.view('a.txt'), 409, 'sandbox_not_running');
  assertProblem(await gone.put('a.txt', { content: 'x' }), 409, 'sandbox_not_running');
  assertProblem(await gone.files('GET', '/grep', { pattern: 'x' }), 409, 'sandbox_not_running');
});
