// A minimal ustar writer for the tests' own hostile archives: names, link targets and types no
// well-behaved tar would produce from a real tree.

export interface TarMember {
  name: string;
  type?: 'file' | 'dir' | 'symlink' | 'hardlink' | 'chardev' | 'fifo';
  data?: Buffer | string;
  linkname?: string;
  mode?: number;
}

const TYPE_FLAG = { file: '0', hardlink: '1', symlink: '2', chardev: '3', dir: '5', fifo: '6' } as const;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function header(member: TarMember, size: number): Buffer {
  const block = Buffer.alloc(512);
  const type = member.type ?? 'file';
  block.write(member.name, 0, 100, 'utf8');
  block.write(octal(member.mode ?? (type === 'dir' ? 0o755 : 0o644), 8), 100, 'ascii');
  block.write(octal(1000, 8), 108, 'ascii');
  block.write(octal(1000, 8), 116, 'ascii');
  block.write(octal(size, 12), 124, 'ascii');
  block.write(octal(Math.floor(Date.now() / 1000), 12), 136, 'ascii');
  block.write('        ', 148, 'ascii');
  block.write(TYPE_FLAG[type], 156, 'ascii');
  if (member.linkname) block.write(member.linkname, 157, 100, 'utf8');
  block.write('ustar\u000000', 257, 'ascii');
  if (type === 'chardev') {
    block.write(octal(1, 8), 329, 'ascii');
    block.write(octal(3, 8), 337, 'ascii');
  }
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return block;
}

/** One member: its header, then its data padded to a block (a file's only). */
export function tarMember(member: TarMember): Buffer {
  const data = (member.type ?? 'file') === 'file' ? Buffer.from(member.data ?? '') : Buffer.alloc(0);
  return Buffer.concat([header(member, data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}

export function tarOf(members: TarMember[]): Buffer {
  return Buffer.concat([...members.map(tarMember), Buffer.alloc(1024)]);
}
