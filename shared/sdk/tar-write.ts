import { LocalArchiveError } from './errors.ts';
import { errnoOf, localFs, type LocalFs, type LocalPath } from './local-fs.ts';

// A tar writer for uploadDir: ustar headers, with a PAX record before a member whose name or link
// is longer than ustar holds or not ASCII, or whose size or time is past its octal fields (the
// format of Python's tarfile PAX_FORMAT, which the server's GNU tar reads).

const BLOCK = 512;
const CHUNK = 256 * 1024;
/** The largest value of an 11-digit octal field (size, mtime): 8 GiB less a byte. */
const OCTAL_MAX = 0o77777777777;
const encoder = new TextEncoder();

interface TarMember {
  /** Relative, '/'-separated; a directory's ends in '/'. */
  name: string;
  /** '0' file, '1' hard link, '2' symlink, '5' directory, 'x' PAX records. */
  type: '0' | '1' | '2' | '5' | 'x';
  mode: number;
  size: number;
  /** Seconds since the epoch. */
  mtime: number;
  linkname?: string;
}

/**
 * The directory's contents as a tar (members relative to it, names in code-point order, a
 * directory's members right after it), produced as the tree is walked and each file read: no
 * more than one chunk of a file is held at once. Symlinks are archived as links, never followed;
 * owners are 0 and unnamed; sockets, fifos and devices are left out. A path that is no directory
 * is refused here, before anything is read or sent.
 */
export async function tarOfDir(localDir: string): Promise<AsyncGenerator<Uint8Array, void, undefined>> {
  const { fs, path } = await localFs();
  const root = path.resolve(localDir);
  const stats = await fs.stat(root).catch(() => undefined);
  if (!stats?.isDirectory()) throw new LocalArchiveError('not_a_directory', `${localDir} is not a directory.`);
  return tarOf(fs, path, root);
}

async function* tarOf(fs: LocalFs, path: LocalPath, root: string): AsyncGenerator<Uint8Array, void, undefined> {
  yield* walk(fs, path, root, '', new Map());
  // Two zero blocks end the archive.
  yield new Uint8Array(2 * BLOCK);
}

async function* walk(fs: LocalFs, path: LocalPath, dir: string, prefix: string, linked: Map<string, string>): AsyncGenerator<Uint8Array, void, undefined> {
  for (const entry of (await fs.readdir(dir)).sort(byCodePoint)) {
    const full = path.join(dir, entry);
    const name = prefix + entry;
    let st;
    try {
      st = await fs.lstat(full);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') continue; // gone since the directory was read
      throw err;
    }
    const mode = st.mode & 0o7777;
    const mtime = Math.floor(st.mtimeMs / 1000);
    if (st.isDirectory()) {
      yield headerOf({ name: `${name}/`, type: '5', mode, size: 0, mtime });
      yield* walk(fs, path, full, `${name}/`, linked);
    } else if (st.isSymbolicLink()) {
      yield headerOf({ name, type: '2', mode, size: 0, mtime, linkname: await fs.readlink(full) });
    } else if (st.isFile()) {
      // A file with other names is sent once; the names after the first are hard links to it, as tar does.
      const inode = `${st.dev}:${st.ino}`;
      const first = st.nlink > 1 ? linked.get(inode) : undefined;
      if (first !== undefined) {
        yield headerOf({ name, type: '1', mode, size: 0, mtime, linkname: first });
        continue;
      }
      if (st.nlink > 1) linked.set(inode, name);
      yield headerOf({ name, type: '0', mode, size: st.size, mtime });
      yield* fileChunks(fs, full, st.size);
    }
  }
}

/** The file's first `size` bytes (the header promised them), zero-filled if it shrank, padded to a block. */
async function* fileChunks(fs: LocalFs, file: string, size: number): AsyncGenerator<Uint8Array, void, undefined> {
  const handle = await fs.open(file, 'r');
  let left = size;
  try {
    while (left > 0) {
      // A fresh buffer each time: the one yielded is the request body's until it is sent.
      const buffer = new Uint8Array(Math.min(CHUNK, left));
      const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, null);
      if (bytesRead === 0) break;
      left -= bytesRead;
      yield bytesRead === buffer.byteLength ? buffer : buffer.subarray(0, bytesRead);
    }
  } finally {
    await handle.close();
  }
  const pad = (BLOCK - (size % BLOCK)) % BLOCK;
  if (left + pad > 0) yield new Uint8Array(left + pad);
}

/** A member's header block, after a PAX header and its records when ustar cannot say it all. */
function headerOf(member: TarMember): Uint8Array {
  const bigSize = member.size > OCTAL_MAX;
  const oddTime = member.mtime < 0 || member.mtime > OCTAL_MAX;
  const pax: [string, string][] = [];
  if (!fitsUstar(member.name)) pax.push(['path', member.name]);
  if (member.linkname !== undefined && !fitsUstar(member.linkname)) pax.push(['linkpath', member.linkname]);
  if (bigSize) pax.push(['size', String(member.size)]);
  if (oddTime) pax.push(['mtime', String(member.mtime)]);
  const block = ustarBlock({ ...member, size: bigSize ? 0 : member.size, mtime: oddTime ? 0 : member.mtime });
  if (pax.length === 0) return block;
  const records = encoder.encode(pax.map(([key, value]) => paxRecord(key, value)).join(''));
  const padded = Math.ceil(records.byteLength / BLOCK) * BLOCK;
  const out = new Uint8Array(BLOCK + padded + BLOCK);
  out.set(ustarBlock({ name: '././@PaxHeader', type: 'x', mode: 0o644, size: records.byteLength, mtime: 0 }), 0);
  out.set(records, BLOCK);
  out.set(block, BLOCK + padded);
  return out;
}

function fitsUstar(text: string): boolean {
  return /^[\x00-\x7f]*$/.test(text) && text.length <= 100;
}

/** "<length> <key>=<value>\n", the length counting its own digits. */
function paxRecord(key: string, value: string): string {
  const rest = encoder.encode(` ${key}=${value}\n`).byteLength;
  // Once more in case the digits pushed the length past a power of ten.
  const length = rest + String(rest + String(rest).length).length;
  return `${length} ${key}=${value}\n`;
}

function ustarBlock(member: TarMember): Uint8Array {
  const block = new Uint8Array(BLOCK);
  const put = (at: number, length: number, text: string) => block.set(encoder.encode(text).subarray(0, length), at);
  const octal = (at: number, length: number, value: number) => put(at, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
  put(0, 100, member.name);
  octal(100, 8, member.mode);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, member.size);
  octal(136, 12, member.mtime);
  put(156, 1, member.type);
  put(157, 100, member.linkname ?? '');
  put(257, 8, 'ustar\x0000');
  octal(329, 8, 0);
  octal(337, 8, 0);
  // The checksum is summed with its own field as spaces.
  block.fill(0x20, 148, 156);
  put(148, 8, `${block.reduce((sum, byte) => sum + byte, 0).toString(8).padStart(6, '0')}\0 `);
  return block;
}

/** Code-point order (JavaScript's own sort compares UTF-16 units, which puts some characters elsewhere). */
function byCodePoint(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}
