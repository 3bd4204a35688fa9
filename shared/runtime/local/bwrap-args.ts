import { lstat, readlink } from 'node:fs/promises';
import { GENERATED_ETC, runningAsRoot, SANDBOX_GID, SANDBOX_UID, WORKSPACE } from './identity.ts';

// A sandbox as bubblewrap arguments: its namespaces, its user, and what it sees of the file
// system. The root is a fresh tmpfs; only what is listed here comes from the host, read-only
// except the workspace. Once every mount is made, the root and /dev are remounted read-only
// (launch.ts): the sandbox writes only /workspace, /tmp and /dev/shm.

// The top-level directories /usr needs beside it: merged-/usr hosts have symlinks, others real ones.
const SYSTEM_DIRS = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

// Of the host's /etc, only what programs need to run, resolve names and check certificates;
// nothing that says who uses the host or holds its configuration or secrets.
const HOST_ETC = [
  'nsswitch.conf',
  'host.conf',
  'gai.conf',
  'ld.so.cache',
  'localtime',
  'alternatives',
  'ssl/certs',
  'ssl/openssl.cnf',
  'ca-certificates',
  'protocols',
  'services',
  'mime.types',
  'os-release',
];

export const GENERATED = Object.keys(GENERATED_ETC);
/** Bubblewrap reads GENERATED_ETC's files from these descriptors on, in GENERATED's order. */
export const GENERATED_ETC_FIRST_FD = 6;

/** Arguments that recreate the host's /bin, /lib… beside /usr, read once per runtime. */
export async function systemDirArgs(): Promise<string[]> {
  const args: string[] = [];
  for (const name of SYSTEM_DIRS) {
    const path = `/${name}`;
    const info = await lstat(path).catch(() => undefined);
    if (info?.isSymbolicLink()) args.push('--symlink', await readlink(path), path);
    else if (info?.isDirectory()) args.push('--ro-bind', path, path);
  }
  return args;
}

// A minimal /dev of the host's harmless devices. Not bubblewrap's --dev: its devpts needs uid 0
// inside, which again means a nested user namespace.
const DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];
const DEV = [
  '--tmpfs', '/dev',
  ...DEVICES.flatMap((name) => ['--dev-bind', `/dev/${name}`, `/dev/${name}`]),
  '--symlink', '/proc/self/fd', '/dev/fd',
  ...['stdin', 'stdout', 'stderr'].flatMap((name, fd) => ['--symlink', `/proc/self/fd/${fd}`, `/dev/${name}`]),
  '--tmpfs', '/dev/shm',
  // The mount point of the sandbox's own devpts, mounted once it runs (see pts.ts): the terminal's
  // pseudo-terminals are the sandbox's alone.
  '--dir', '/dev/pts',
  '--symlink', 'pts/ptmx', '/dev/ptmx',
];

export interface SandboxArgsOptions {
  systemDirs: string[];
  workspace: string;
}

export function sandboxArgs(options: SandboxArgsOptions): string[] {
  return [
    // Every namespace, the network one too: a sandbox with network gets it through slirp4netns
    // (network.ts), never the host's.
    '--unshare-all',
    '--unshare-user',
    // No user namespaces inside, so less of the kernel to attack. It makes bubblewrap nest the
    // sandbox's user namespace in another, whose namespaces only root can enter: a developer
    // running Paddock as themself goes without.
    ...(runningAsRoot ? ['--disable-userns'] : []),
    '--uid', String(SANDBOX_UID),
    '--gid', String(SANDBOX_GID),
    '--hostname', 'sandbox',
    '--ro-bind', '/usr', '/usr',
    ...options.systemDirs,
    // Made first, as bubblewrap would otherwise make them 0700 for the binds below.
    ...['/etc', '/etc/ssl'].flatMap((dir) => ['--perms', '0755', '--dir', dir]),
    ...HOST_ETC.flatMap((name) => ['--ro-bind-try', `/etc/${name}`, `/etc/${name}`]),
    // Their bytes come through descriptors (launch.ts writes them), not binds of the data dir's
    // copies: a bind would name the host's path in the sandbox's /proc/self/mountinfo.
    ...GENERATED.flatMap((name, i) => ['--perms', '0644', '--ro-bind-data', String(GENERATED_ETC_FIRST_FD + i), `/etc/${name}`]),
    '--proc', '/proc',
    ...DEV,
    '--tmpfs', '/tmp',
    '--bind', options.workspace, WORKSPACE,
    '--chdir', WORKSPACE,
  ];
}
