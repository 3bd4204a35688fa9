import { LocalArchiveError } from './errors.ts';
import { errnoOf, localFs, type LocalFs, type LocalPath } from './local-fs.ts';

// A tar reader for downloadDir: ustar and old tar headers, PAX records ('x', and 'g' for all that
// follow), GNU long names and links ('L', 'K') and GNU base-256 numbers. It writes as it reads;
// nothing is held but a header and one chunk.

const BLOCK = 512;
/** PAX records and GNU long names larger than this are no archive the server writes. */
const HEADER_DATA_MAX = 1024 * 1024;
/** What may follow the end of the archive (GNU tar pads it to a 10 KiB record) is read up to this, then left. */
const TRAILER_MAX = 64 * 1024;
const decoder = new TextDecoder();

interface Header {
  name: string;
  type: string;
  mode: number;
  size: number;
  mtime: number;
  linkname: string;
}

type Pax = Partial<Record<'path' | 'linkpath' | 'size' | 'mtime', string>>;

/**
 * Extracts a tar read from `chunks` under `localDir` (made when missing) and answers the members
 * written: directories, regular files, symlinks and hard links. Each file is written under a
 * temporary name and renamed once whole, with its mode bits (never set-id) and mtime. Refused
 * with a LocalArchiveError, before anything of it is written: a member whose name is absolute or
 * holds `..`, one whose path passes through a symlink, a symlink pointing out of `localDir`, a
 * hard link to something not extracted inside it. Devices and fifos are left out.
 */
export async function extractTar(chunks: AsyncIterable<Uint8Array>, localDir: string): Promise<number> {
  const { fs, path } = await localFs();
  await fs.mkdir(localDir, { recursive: true });
  const out = new Extractor(fs, path, await fs.realpath(localDir));
  const source = new ByteSource(chunks);
  try {
    let global: Pax = {};
    let pax: Pax = {};
    let longName: string | undefined;
    let longLink: string | undefined;
    for (;;) {
      const block = await source.read(BLOCK);
      if (!block) throw new LocalArchiveError('malformed_archive', 'The archive ended before its end-of-archive blocks.');
      if (block.every((b) => b === 0)) {
        await source.drain(TRAILER_MAX);
        return out.count;
      }
      const header = parseHeader(block);
      const dataSize = DATALESS.has(header.type) ? 0 : header.size;
      switch (header.type) {
        case 'x':
          pax = { ...pax, ...parsePax(await source.readData(dataSize)) };
          continue;
        case 'g':
          global = { ...global, ...parsePax(await source.readData(dataSize)) };
          continue;
        case 'L':
          longName = cString(await source.readData(dataSize));
          continue;
        case 'K':
          longLink = cString(await source.readData(dataSize));
          continue;
      }
      const fields = { ...global, ...pax };
      const member: Header = {
        ...header,
        name: fields.path ?? longName ?? header.name,
        linkname: fields.linkpath ?? longLink ?? header.linkname,
        size: fields.size !== undefined ? paxNumber(fields.size, 'size') : header.size,
        mtime: fields.mtime !== undefined ? paxNumber(fields.mtime, 'mtime') : header.mtime,
      };
      pax = {};
      longName = longLink = undefined;
      const size = DATALESS.has(member.type) ? 0 : member.size;
      if (REGULAR.has(member.type)) await out.file(member, source.take(size));
      else {
        if (member.type === '5') await out.directory(member);
        else if (member.type === '2') await out.symlink(member);
        else if (member.type === '1') await out.hardLink(member);
        // Devices, fifos, GNU volume labels and the like are never made.
        await source.skip(size);
      }
      await source.skip((BLOCK - (size % BLOCK)) % BLOCK);
    }
  } finally {
    await source.close();
  }
}

/** Types whose size field says nothing of data that follows (a hard link's may be the file's). */
const DATALESS = new Set(['1', '2', '3', '4', '5', '6']);
const REGULAR = new Set(['0', '\0', '7']);

class Extractor {
  count = 0;
  readonly #fs: LocalFs;
  readonly #path: LocalPath;
  readonly #root: string;
  /** Directories checked to be directories (not links) since the extraction began, relative, '/'-joined. */
  readonly #dirs = new Set<string>(['']);

  constructor(fs: LocalFs, path: LocalPath, root: string) {
    this.#fs = fs;
    this.#path = path;
    this.#root = root;
  }

  async directory(member: Header): Promise<void> {
    const parts = this.#partsOf(member.name);
    if (!parts) return;
    await this.#parents(member.name, parts);
    const dest = this.#path.join(this.#root, ...parts);
    const existing = await this.#lstat(dest);
    if (existing && !existing.isDirectory()) throw refused(member.name, existing.isSymbolicLink() ? 'a symlink is there already' : 'a file is there already');
    if (!existing) await this.#fs.mkdir(dest, { mode: 0o700 });
    // Its members are written into it after, whatever its own mode.
    await this.#fs.chmod(dest, (member.mode & 0o777) | 0o700);
    this.#dirs.add(parts.join('/'));
    this.count++;
  }

  async file(member: Header, data: AsyncIterable<Uint8Array>): Promise<void> {
    const parts = this.#partsOf(member.name);
    if (!parts) throw refused(member.name, 'a file cannot stand for the directory itself');
    await this.#parents(member.name, parts);
    const dest = this.#path.join(this.#root, ...parts);
    const partial = this.#path.join(this.#path.dirname(dest), `.paddock-${crypto.randomUUID().slice(0, 8)}.part`);
    const handle = await this.#fs.open(partial, 'wx', 0o600);
    try {
      try {
        for await (const chunk of data) {
          for (let at = 0; at < chunk.byteLength; ) at += (await handle.write(chunk.subarray(at))).bytesWritten;
        }
        await handle.chmod(member.mode & 0o777);
        await handle.utimes(member.mtime, member.mtime);
      } finally {
        await handle.close();
      }
      await this.#fs.rename(partial, dest);
    } catch (err) {
      await this.#fs.rm(partial, { force: true });
      throw err;
    }
    this.count++;
  }

  async symlink(member: Header): Promise<void> {
    const parts = this.#partsOf(member.name);
    if (!parts) throw refused(member.name, 'a symlink cannot stand for the directory itself');
    await this.#parents(member.name, parts);
    const target = member.linkname;
    if (target === '') throw refused(member.name, 'its link is empty');
    if (target.startsWith('/') || (this.#path.sep !== '/' && /[\\:]/.test(target))) throw refused(member.name, `its link ${target} is absolute`);
    // Leading `..` climb real directories (a member is never written through a link), so they are
    // counted; a `..` after a name could climb out of a link's target, and is refused.
    const steps = target.split('/').filter((p) => p !== '' && p !== '.');
    const ups = steps.findIndex((p) => p !== '..');
    const climbs = ups === -1 ? steps.length : ups;
    if (steps.slice(climbs).includes('..') || climbs > parts.length - 1) throw refused(member.name, `its link ${target} points out of ${this.#root}`);
    const pointed = this.#path.join(this.#root, ...parts.slice(0, parts.length - 1 - climbs), ...steps.slice(climbs));
    if (!(await this.#resolvesInside(pointed))) throw refused(member.name, `its link ${target} points out of ${this.#root}`);
    const dest = this.#path.join(this.#root, ...parts);
    await this.#replace(member.name, dest);
    await this.#fs.symlink(target, dest);
    this.count++;
  }

  async hardLink(member: Header): Promise<void> {
    const parts = this.#partsOf(member.name);
    const source = this.#partsOf(member.linkname, member.name);
    if (!parts || !source) throw refused(member.name, `a hard link between ${member.name} and ${member.linkname} cannot stand for the directory itself`);
    await this.#parents(member.name, parts);
    await this.#parents(member.name, source);
    const from = this.#path.join(this.#root, ...source);
    const existing = await this.#lstat(from);
    if (!existing?.isFile()) throw refused(member.name, `its link ${member.linkname} is no file extracted before it`);
    const dest = this.#path.join(this.#root, ...parts);
    await this.#replace(member.name, dest);
    await this.#fs.link(from, dest);
    this.count++;
  }

  /** A name's parts under the root (none for the root itself); an absolute name or `..` is refused. */
  #partsOf(name: string, member = name): string[] | undefined {
    const what = name === member ? 'it' : `its link ${name}`;
    if (name.startsWith('/') || (this.#path.sep !== '/' && /[\\:]/.test(name))) throw refused(member, `${what} is absolute`);
    const parts = name.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.includes('..')) throw refused(member, `${what} climbs out of ${this.#root}`);
    return parts.length > 0 ? parts : undefined;
  }

  /** Makes the member's parent directories, refusing one that is a symlink: nothing is written through a link. */
  async #parents(name: string, parts: string[]): Promise<void> {
    for (let i = 1; i < parts.length; i++) {
      const rel = parts.slice(0, i).join('/');
      if (this.#dirs.has(rel)) continue;
      const dir = this.#path.join(this.#root, ...parts.slice(0, i));
      const st = await this.#lstat(dir);
      if (st?.isSymbolicLink()) throw refused(name, `it would be written through the symlink ${rel}`);
      if (!st) await this.#fs.mkdir(dir, { mode: 0o755 });
      else if (!st.isDirectory()) throw refused(name, `${rel} is not a directory`);
      this.#dirs.add(rel);
    }
  }

  /** Takes away what is at dest (a file or a link, never a directory) for a link to take its place. */
  async #replace(name: string, dest: string): Promise<void> {
    const existing = await this.#lstat(dest);
    if (existing?.isDirectory()) throw refused(name, 'a directory is there already');
    if (existing) await this.#fs.unlink(dest);
  }

  /** Whether the path, as far as it exists, resolves (links followed) under the root. */
  async #resolvesInside(pointed: string): Promise<boolean> {
    let at = pointed;
    let missing = '';
    for (;;) {
      try {
        const real = (await this.#fs.realpath(at)) + missing;
        return real === this.#root || real.startsWith(this.#root.endsWith(this.#path.sep) ? this.#root : this.#root + this.#path.sep);
      } catch (err) {
        if (errnoOf(err) !== 'ENOENT' && errnoOf(err) !== 'ENOTDIR') throw err;
        // A link that points nowhere yet could be made to point anywhere: what goes through it is refused.
        if ((await this.#lstat(at))?.isSymbolicLink()) return false;
        const up = this.#path.dirname(at);
        if (up === at) return false;
        missing = at.slice(up.length) + missing;
        at = up;
      }
    }
  }

  async #lstat(file: string) {
    try {
      return await this.#fs.lstat(file);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return undefined;
      throw err;
    }
  }
}

function refused(member: string, why: string): LocalArchiveError {
  return new LocalArchiveError('unsafe_member', `Refusing archive member ${JSON.stringify(member)}: ${why}.`, member);
}

function malformed(why: string): LocalArchiveError {
  return new LocalArchiveError('malformed_archive', `The archive is not a tar archive: ${why}.`);
}

function parseHeader(block: Uint8Array): Header {
  const stored = number(block.subarray(148, 156), 'checksum');
  let sum = 8 * 0x20;
  for (let i = 0; i < BLOCK; i++) if (i < 148 || i >= 156) sum += block[i]!;
  if (stored !== sum) throw malformed('a header checksum is wrong');
  let name = cString(block.subarray(0, 100));
  // POSIX ustar splits a long name over a prefix field; GNU's magic ("ustar  ") has other fields there.
  if (decoder.decode(block.subarray(257, 263)) === 'ustar\0') {
    const prefix = cString(block.subarray(345, 500));
    if (prefix) name = `${prefix}/${name}`;
  }
  return {
    name,
    type: String.fromCharCode(block[156]!),
    mode: number(block.subarray(100, 108), 'mode'),
    size: number(block.subarray(124, 136), 'size'),
    mtime: number(block.subarray(136, 148), 'mtime'),
    linkname: cString(block.subarray(157, 257)),
  };
}

/** An octal field (NUL- or space-ended), or GNU's base-256 (its first byte's high bit set). */
function number(field: Uint8Array, what: string): number {
  if (field[0]! & 0x80) {
    if (field[0] !== 0x80) throw malformed(`a negative ${what}`);
    let value = 0;
    for (const byte of field.subarray(1)) value = value * 256 + byte;
    if (!Number.isSafeInteger(value)) throw malformed(`a ${what} too large`);
    return value;
  }
  const text = decoder.decode(field).replace(/[\0 ]+$/, '').replace(/^[\0 ]+/, '');
  if (!/^[0-7]*$/.test(text)) throw malformed(`a ${what} field is not octal`);
  return text === '' ? 0 : parseInt(text, 8);
}

function paxNumber(text: string, what: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || (what === 'size' && !Number.isSafeInteger(value))) throw malformed(`a PAX ${what} of ${text}`);
  return what === 'mtime' ? value : Math.floor(value);
}

/** PAX records: "<length> <key>=<value>\n", the length counting the whole record. */
function parsePax(data: Uint8Array): Pax {
  const pax: Record<string, string> = {};
  let at = 0;
  while (at < data.byteLength) {
    const space = data.indexOf(0x20, at);
    const length = space > at ? Number(decoder.decode(data.subarray(at, space))) : NaN;
    if (!Number.isSafeInteger(length) || length <= space - at || at + length > data.byteLength || data[at + length - 1] !== 0x0a) {
      if (data.subarray(at).every((b) => b === 0)) break;
      throw malformed('a PAX record is cut short');
    }
    const record = decoder.decode(data.subarray(space + 1, at + length - 1));
    const equals = record.indexOf('=');
    if (equals < 1) throw malformed('a PAX record has no key');
    pax[record.slice(0, equals)] = record.slice(equals + 1);
    at += length;
  }
  const kept: Pax = {};
  for (const key of ['path', 'linkpath', 'size', 'mtime'] as const) if (pax[key] !== undefined && pax[key] !== '') kept[key] = pax[key];
  return kept;
}

function cString(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  return decoder.decode(end === -1 ? bytes : bytes.subarray(0, end));
}

/** Exact byte counts pulled from chunks as they come. */
class ByteSource {
  readonly #chunks: AsyncIterator<Uint8Array>;
  #held: Uint8Array = new Uint8Array(0);
  #done = false;

  constructor(chunks: AsyncIterable<Uint8Array>) {
    this.#chunks = chunks[Symbol.asyncIterator]();
  }

  /** `n` bytes, or undefined when the chunks end before the first of them. */
  async read(n: number): Promise<Uint8Array | undefined> {
    if (this.#held.byteLength >= n) return this.#cut(n);
    const out = new Uint8Array(n);
    let got = 0;
    while (got < n) {
      if (this.#held.byteLength === 0 && !(await this.#pull())) {
        if (got === 0) return undefined;
        throw malformed('it ends inside a header');
      }
      const piece = this.#cut(Math.min(n - got, this.#held.byteLength));
      out.set(piece, got);
      got += piece.byteLength;
    }
    return out;
  }

  /** A header's data (PAX records, a GNU long name): `n` bytes and their padding. */
  async readData(n: number): Promise<Uint8Array> {
    if (n > HEADER_DATA_MAX) throw malformed(`an extended header of ${n} bytes`);
    const data = (await this.read(n)) ?? new Uint8Array(0);
    if (data.byteLength < n) throw malformed('it ends inside an extended header');
    await this.skip((BLOCK - (n % BLOCK)) % BLOCK);
    return data;
  }

  /** The next `n` bytes as they come; the chunks ending first is an error. */
  async *take(n: number): AsyncGenerator<Uint8Array, void, undefined> {
    let left = n;
    while (left > 0) {
      if (this.#held.byteLength === 0 && !(await this.#pull())) throw malformed('it ends inside a file');
      const piece = this.#cut(Math.min(left, this.#held.byteLength));
      left -= piece.byteLength;
      yield piece;
    }
  }

  async skip(n: number): Promise<void> {
    for await (const piece of this.take(n)) void piece;
  }

  /** Reads what is left, up to `max` bytes (then stops: closing the source ends the download). */
  async drain(max: number): Promise<void> {
    let read = this.#held.byteLength;
    this.#held = new Uint8Array(0);
    while (read <= max && (await this.#pull())) {
      read += this.#held.byteLength;
      this.#held = new Uint8Array(0);
    }
  }

  async close(): Promise<void> {
    if (!this.#done) {
      this.#done = true;
      await this.#chunks.return?.();
    }
  }

  #cut(n: number): Uint8Array {
    const piece = this.#held.subarray(0, n);
    this.#held = this.#held.subarray(n);
    return piece;
  }

  async #pull(): Promise<boolean> {
    if (this.#done) return false;
    const next = await this.#chunks.next();
    if (next.done) {
      this.#done = true;
      return false;
    }
    this.#held = next.value;
    return true;
  }
}
