import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalArchiveError } from '../../shared/sdk/index.ts';
import { extractTar } from '../../shared/sdk/tar-read.ts';
import { tarOfDir } from '../../shared/sdk/tar-write.ts';
import { tarMember, tarOf, type TarMember } from '../files/tar-writer.ts';

// The SDK's own tar writer and reader, without an API: the reader's refusals against archives
// built by hand here (a server's GNU tar never writes them), and both against the system's GNU tar.

const work = mkdtempSync(join(tmpdir(), 'paddock-sdk-tar-'));
test.after(() => rmSync(work, { recursive: true, force: true }));
let fresh = 0;
const freshDir = () => join(work, `t${++fresh}`);

/** A hand-built tar member (test/files/tar-writer.ts writes what no well-behaved tar would). */
const member = (name: string, opts: Omit<TarMember, 'name'> = {}): TarMember => ({ name, ...opts });

async function* chunked(bytes: Uint8Array, size = 100): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, at + size);
}

const refused = (name: string) => (e: unknown) => e instanceof LocalArchiveError && e.code === 'unsafe_member' && e.member === name;

test('a member that climbs out (../x, a/../../x) or is absolute is refused, and nothing is written outside', async () => {
  const parent = freshDir();
  const dir = join(parent, 'into');
  mkdirSync(parent);
  await assert.rejects(extractTar(chunked(tarOf([member('ok.txt', { data: 'fine' }), member('../x', { data: 'out' })])), dir), refused('../x'));
  assert.equal(existsSync(join(parent, 'x')), false);
  await assert.rejects(extractTar(chunked(tarOf([member('a/../../y', { data: 'out' })])), dir), refused('a/../../y'));
  assert.equal(existsSync(join(parent, 'y')), false);
  const absolute = join(parent, 'abs.txt');
  await assert.rejects(extractTar(chunked(tarOf([member(absolute, { data: 'out' })])), dir), refused(absolute));
  assert.equal(existsSync(absolute), false);
  await assert.rejects(extractTar(chunked(tarOf([member('../d/', { type: 'dir' })])), dir), refused('../d/'));
  assert.equal(existsSync(join(parent, 'd')), false);
  assert.deepEqual(readdirSync(parent), ['into']);
  assert.deepEqual(readdirSync(dir), ['ok.txt'], 'what came before the refused member is written, nothing of it or after');
});

test('symlinks: one pointing out (absolute, too many .., .. past a link) is refused; a member through a link made earlier is refused', async () => {
  const dir = freshDir();
  await assert.rejects(extractTar(chunked(tarOf([member('etc', { type: 'symlink', linkname: '/etc' })])), dir), refused('etc'));
  await assert.rejects(extractTar(chunked(tarOf([member('d/', { type: 'dir' }), member('d/up', { type: 'symlink', linkname: '../..' })])), dir), refused('d/up'));
  // d/b -> .. is the root itself, but b/.. from d climbs past it: the kernel follows b first.
  await assert.rejects(extractTar(chunked(tarOf([member('d/b', { type: 'symlink', linkname: '..' }), member('d/a', { type: 'symlink', linkname: 'b/..' })])), dir), refused('d/a'));
  await assert.rejects(extractTar(chunked(tarOf([member('sub/', { type: 'dir' }), member('l', { type: 'symlink', linkname: 'sub' }), member('l/f', { data: 'through' })])), dir), refused('l/f'));
  assert.equal(existsSync(join(dir, 'sub', 'f')), false);
  const outside = freshDir();
  mkdirSync(outside);
  await assert.rejects(extractTar(chunked(tarOf([member('o', { type: 'symlink', linkname: outside }), member('o/f', { data: 'x' })])), dir), refused('o'));
  assert.deepEqual(readdirSync(outside), []);
  assert.equal(existsSync(join(dir, 'etc')), false);
  assert.equal(lstatSync(join(dir, 'l')).isSymbolicLink(), true);
  // Inside, a link is made as it is, dangling or not.
  const ok = freshDir();
  const written = await extractTar(chunked(tarOf([member('d/', { type: 'dir' }), member('d/e/', { type: 'dir' }), member('d/e/up', { type: 'symlink', linkname: '../../top' }), member('d/in', { type: 'symlink', linkname: 'e' })])), ok);
  assert.equal(written, 4);
  assert.equal(readlinkSync(join(ok, 'd/e/up')), '../../top');
  assert.equal(readlinkSync(join(ok, 'd/in')), 'e');
});

test('a pre-existing link in the target is not written through, nor is a hard link taken from outside', async () => {
  const dir = freshDir();
  const outside = freshDir();
  mkdirSync(dir);
  mkdirSync(outside);
  symlinkSync(outside, join(dir, 'away'));
  await assert.rejects(extractTar(chunked(tarOf([member('away/f', { data: 'x' })])), dir), refused('away/f'));
  writeFileSync(join(outside, 'secret'), 's');
  await assert.rejects(extractTar(chunked(tarOf([member('h', { type: 'hardlink', linkname: '../secret' })])), dir), refused('h'));
  await assert.rejects(extractTar(chunked(tarOf([member('h', { type: 'hardlink', linkname: 'away/secret' })])), dir), refused('h'));
  assert.deepEqual(readdirSync(outside), ['secret']);
  assert.deepEqual(readdirSync(dir), ['away']);
});

test('modes keep their permission bits, never set-id; devices are left out; the count is of members written', async () => {
  const dir = freshDir();
  const archive = tarOf([
    member('./', { type: 'dir', mode: 0o755 }),
    member('./suid', { data: '#!/bin/sh\n', mode: 0o4755 }),
    member('./private', { data: 'p', mode: 0o600 }),
    member('./dev', { type: 'chardev' }),
    member('./fifo', { type: 'fifo' }),
    member('./first', { data: 'same' }),
    member('./second', { type: 'hardlink', linkname: './first' }),
  ]);
  assert.equal(await extractTar(chunked(archive, 7), dir), 4);
  assert.equal(statSync(join(dir, 'suid')).mode & 0o7777, 0o755);
  assert.equal(statSync(join(dir, 'private')).mode & 0o7777, 0o600);
  assert.equal(statSync(join(dir, 'second')).ino, statSync(join(dir, 'first')).ino);
  assert.deepEqual(readdirSync(dir).sort(), ['first', 'private', 'second', 'suid']);
});

test('an archive cut short leaves no file looking complete, and no temporary one; a wrong checksum is no tar', async () => {
  const dir = freshDir();
  const big = tarMember(member('big', { data: Buffer.alloc(100_000, 7) }));
  const cut = Buffer.concat([tarMember(member('small', { data: 'whole' })), big.subarray(0, 50_000)]);
  await assert.rejects(extractTar(chunked(cut, 4096), dir), (e) => e instanceof LocalArchiveError && e.code === 'malformed_archive');
  assert.deepEqual(readdirSync(dir), ['small']);
  const noEnd = tarMember(member('small', { data: 'whole' }));
  await assert.rejects(extractTar(chunked(noEnd), freshDir()), (e) => e instanceof LocalArchiveError && e.code === 'malformed_archive');
  const garbage = new Uint8Array(1024).fill(0x41);
  await assert.rejects(extractTar(chunked(garbage), freshDir()), (e) => e instanceof LocalArchiveError && e.code === 'malformed_archive' && /checksum/.test(e.message));
  async function* broken(): AsyncGenerator<Uint8Array> {
    yield big.subarray(0, 20_000);
    throw new Error('connection reset');
  }
  const again = freshDir();
  await assert.rejects(extractTar(broken(), again), /connection reset/);
  assert.deepEqual(readdirSync(again), []);
});

/** A tree with what tar has to take care over: nesting, an empty and a large file, a long path, a link, spaces and UTF-8. */
function makeTree(dir: string): void {
  const long = `${'n'.repeat(70)}/${'m'.repeat(70)}`;
  mkdirSync(join(dir, long), { recursive: true });
  writeFileSync(join(dir, long, 'deep.txt'), 'deep');
  mkdirSync(join(dir, 'a/b/c'), { recursive: true });
  writeFileSync(join(dir, 'a/b/c/f.txt'), 'nested');
  writeFileSync(join(dir, 'empty'), '');
  writeFileSync(join(dir, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 'xyz'), { mode: 0o755 });
  writeFileSync(join(dir, 'a/é ü 名前.txt'), 'utf-8');
  symlinkSync('a/b/c/f.txt', join(dir, 'link'));
}

test('the writer: GNU tar reads its archive (PAX long and UTF-8 names, links, owners 0); a file is no directory', async () => {
  const src = freshDir();
  makeTree(src);
  const chunks: Uint8Array[] = [];
  for await (const chunk of await tarOfDir(src)) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  const file = join(work, 'written.tar');
  writeFileSync(file, bytes);
  const listing = execFileSync('tar', ['-tvf', file, '--numeric-owner'], { encoding: 'utf8' }).trim().split('\n');
  assert.ok(listing.every((line) => / 0\/0 /.test(line)), listing.join('\n'));
  const names = execFileSync('tar', ['-tf', file], { encoding: 'utf8' }).trim().split('\n');
  assert.deepEqual(names.slice(0, 4), ['a/', 'a/b/', 'a/b/c/', 'a/b/c/f.txt']);
  assert.ok(names.includes(`${'n'.repeat(70)}/${'m'.repeat(70)}/deep.txt`));
  assert.ok(names.includes('a/é ü 名前.txt'));
  assert.ok(listing.some((line) => /^l.* link -> a\/b\/c\/f\.txt$/.test(line)));
  const out = freshDir();
  mkdirSync(out);
  execFileSync('tar', ['-xf', file, '-C', out]);
  assert.equal(execFileSync('diff', ['-r', '--no-dereference', src, out], { encoding: 'utf8' }), '');
  await assert.rejects(tarOfDir(join(src, 'empty')), (e) => e instanceof LocalArchiveError && e.code === 'not_a_directory');
  await assert.rejects(tarOfDir(join(src, 'missing')), (e) => e instanceof LocalArchiveError && e.code === 'not_a_directory');
});

test('the reader takes what GNU tar writes, in its gnu (long names as L members), posix and ustar formats', async () => {
  const src = freshDir();
  makeTree(src);
  for (const format of ['gnu', 'posix', 'ustar']) {
    const out = freshDir();
    let archive: Buffer;
    try {
      archive = execFileSync('tar', [`--format=${format}`, '-cf', '-', '-C', src, '.'], { maxBuffer: 64 * 1024 * 1024 });
    } catch (err) {
      assert.fail(`tar --format=${format}: ${String(err)}`);
    }
    assert.equal(await extractTar(chunked(archive, 65_536), out), 11, format);
    assert.equal(execFileSync('diff', ['-r', '--no-dereference', src, out], { encoding: 'utf8' }), '', format);
    assert.equal(statSync(join(out, 'big.bin')).mode & 0o777, 0o755);
    assert.deepEqual(readFileSync(join(out, 'big.bin')), readFileSync(join(src, 'big.bin')));
  }
});
