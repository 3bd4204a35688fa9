import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileGlob, expandBraces } from '../../api/services/files/glob-match.ts';
import { replaceBytes } from '../../api/services/files/edit.ts';
import { selectLines } from '../../api/services/files/view.ts';
import { GrepOutputParser, validateRegex } from '../../api/services/files/grep.ts';
import { RecordSplitter } from '../../api/services/files/glob.ts';
import { parseListing } from '../../api/services/files/list.ts';

const matches = (pattern: string, rel: string, base = '/w') => {
  const g = compileGlob(pattern, base);
  // The path as find reports it: relative to where the walk starts.
  const abs = `${base}/${rel}`;
  const start = g.start === '/' ? '/' : `${g.start}/`;
  return abs.startsWith(start) && g.matches(abs.slice(start.length));
};

test('* and ? stay within one segment; ** crosses directories', () => {
  assert.ok(matches('*.ts', 'a.ts'));
  assert.ok(!matches('*.ts', 'src/a.ts'));
  assert.ok(matches('**/*.ts', 'a.ts'));
  assert.ok(matches('**/*.ts', 'src/deep/er/a.ts'));
  assert.ok(matches('src/**/a.ts', 'src/a.ts'));
  assert.ok(matches('src/**/a.ts', 'src/x/y/a.ts'));
  assert.ok(!matches('src/**/a.ts', 'lib/x/a.ts'));
  assert.ok(matches('src/**', 'src/x/y'));
  assert.ok(matches('a?c', 'abc'));
  assert.ok(!matches('a?c', 'a/c'));
  assert.ok(matches('?', '日'), '? is one character, not one byte');
  assert.ok(matches('🦊*', '🦊fox'));
  assert.ok(!matches('*.TS', 'a.ts'), 'case-sensitive');
});

test('bracket expressions, escapes and braces', () => {
  assert.ok(matches('[abc].txt', 'b.txt'));
  assert.ok(!matches('[abc].txt', 'd.txt'));
  assert.ok(matches('[a-c][0-9]', 'b7'));
  assert.ok(matches('[!a-c]', 'd'));
  assert.ok(!matches('[^a-c]', 'a'));
  assert.ok(matches('[]]', ']'));
  assert.ok(matches('[', '['), 'an unclosed bracket is literal');
  assert.ok(matches('\\*', '*'));
  assert.ok(!matches('\\*', 'x'));
  assert.ok(matches('*.{ts,js}', 'a.js'));
  assert.ok(matches('{src,lib}/**/*.ts', 'lib/x/a.ts'));
  assert.ok(!matches('{src,lib}/**/*.ts', 'test/a.ts'));
  assert.deepEqual(expandBraces('a{b,c{d,e}}f'), ['abf', 'acdf', 'acef']);
  assert.deepEqual(expandBraces('{a}'), ['{a}']);
  assert.throws(() => expandBraces('{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}'), /braces expand/);
});

test('wildcards do not match hidden names unless the pattern says so', () => {
  assert.ok(!matches('*', '.env'));
  assert.ok(matches('.*', '.env'));
  assert.ok(!matches('**/*.ts', '.git/a.ts'));
  assert.ok(matches('.git/*.ts', '.git/a.ts'));
  assert.ok(!matches('?env', '.env'));
  assert.equal(compileGlob('**/*.ts', '/w').pruneHidden, true);
  assert.equal(compileGlob('**/.*', '/w').pruneHidden, false);
});

test('literal leading directories become the start of the walk, and depth is bounded without **', () => {
  const g = compileGlob('src/lib/*.ts', '/workspace');
  assert.equal(g.start, '/workspace/src/lib');
  assert.equal(g.maxDepth, 1);
  assert.equal(g.basenameFilter, '*.ts');
  assert.equal(compileGlob('/etc/*', '/workspace').start, '/etc');
  assert.equal(compileGlob('../*', '/workspace').start, '/');
  assert.equal(compileGlob('{src,lib}/*.ts', '/w').start, '/w');
  assert.equal(compileGlob('{src,lib}/*.ts', '/w').maxDepth, 2);
  assert.equal(compileGlob('a/**/b', '/w').maxDepth, 0);
  assert.equal(compileGlob('a/[xy].ts', '/w').basenameFilter, '', 'brackets are not handed to grep');
});

test('matching stays fast on patterns that make backtracking regexes explode', () => {
  const name = 'a'.repeat(250);
  const pattern = `${'*a'.repeat(30)}*b`;
  const started = performance.now();
  assert.ok(!matches(pattern, name));
  const deep = Array.from({ length: 200 }, () => 'x').join('/');
  assert.ok(!matches('**/**/**/**/**/**/y', deep));
  assert.ok(performance.now() - started < 500, `took ${performance.now() - started} ms`);
});

test('line ranges are 1-based, inclusive, clamped, and cut on the bytes', () => {
  const file = Buffer.from('l1\nl2\nl3\nl4\nl5');
  assert.equal(selectLines(file).totalLines, 5);
  assert.equal(selectLines(file, 2, 3).bytes.toString(), 'l2\nl3\n');
  const tail = selectLines(file, 4, 99);
  assert.equal(tail.bytes.toString(), 'l4\nl5');
  assert.equal(tail.endLine, 5);
  assert.equal(selectLines(Buffer.from('a\nb\n')).totalLines, 2);
  assert.equal(selectLines(Buffer.from('a\n\n')).totalLines, 2);
  const empty = selectLines(Buffer.alloc(0));
  assert.deepEqual([empty.totalLines, empty.startLine, empty.endLine, empty.bytes.length], [0, 1, 0, 0]);
  assert.throws(() => selectLines(file, 6), /has 5 lines/);
  assert.throws(() => selectLines(file, 3, 2), /less than startLine/);
});

test('edits replace exact bytes; ambiguity counts overlapping occurrences', () => {
  const edit = (s: string, o: string, n: string, all = false) => {
    const r = replaceBytes(Buffer.from(s), o, n, all);
    return [r.bytes.toString(), r.replacements];
  };
  assert.deepEqual(edit('héllo wörld', 'wörld', '日本'), ['héllo 日本', 1]);
  assert.deepEqual(edit('a-a-a', 'a', 'b', true), ['b-b-b', 3]);
  assert.deepEqual(edit('aaa', 'aa', 'b', true), ['ba', 1]);
  assert.throws(() => edit('aaa', 'aa', 'b'), (e: any) => e.code === 'edit_ambiguous');
  assert.throws(() => edit('abc', 'x', 'y'), (e: any) => e.code === 'edit_no_match');
  const binary = Buffer.from([0xff, 0x00, 0x41, 0xfe]);
  assert.deepEqual([...replaceBytes(binary, 'A', 'BC', false).bytes], [0xff, 0x00, 0x42, 0x43, 0xfe]);
});

test('streamed script output is split correctly across chunk boundaries', () => {
  const out = Buffer.from('/w/a b\0' + '12:x:y\n' + '/w/new\nline\0' + '3:z\n');
  const seen: string[] = [];
  const parser = new GrepOutputParser();
  for (let i = 0; i < out.length; i += 3) parser.push(out.subarray(i, i + 3), (p, l, t) => (seen.push(`${p}|${l}|${t}`), true));
  assert.deepEqual(seen, ['/w/a b|12|x:y', '/w/new\nline|3|z']);
  const records: string[] = [];
  const splitter = new RecordSplitter(0);
  const list = Buffer.from('a\0bb\0c c\0');
  for (let i = 0; i < list.length; i++) splitter.push(list.subarray(i, i + 1), (r) => (records.push(r.toString()), true));
  assert.deepEqual(records, ['a', 'bb', 'c c']);
  assert.deepEqual(
    parseListing(Buffer.from('f 12 1700000000.5 a file\0l 4 1700000000 link\0p 0 1 fifo\0')).map((e) => [e.name, e.type, e.size]),
    [
      ['a file', 'file', 12],
      ['link', 'symlink', 4],
      ['fifo', 'other', 0],
    ],
  );
});

test('Perl-only regular expression syntax is refused with a hint; the same characters in ERE roles are not', () => {
  for (const bad of ['\\d+', 'a\\D', '(?i)abc', 'x(?=y)', 'a\nb']) {
    assert.throws(() => validateRegex(bad), (e: any) => e.code === 'invalid_request', bad);
  }
  for (const ok of ['\\\\d', '[\\d]', '[(?]', '\\(?x', '[]d]\\w+', '[[:digit:]]+\\b', 'fo+ba[rz]']) {
    assert.doesNotThrow(() => validateRegex(ok), ok);
  }
});
