import { lstat, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { GENERATED_ETC, runningAsRoot, SANDBOX_GID, SANDBOX_UID, WORKSPACE } from './identity.ts';

// A sandbox as bubblewrap arguments: its namespaces, its user, and what it sees of the file
// system. The root is a fresh tmpfs; only what is listed here comes from the host, read-only
// except the workspace.

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

const GENERATED = Object.keys(GENERATED_ETC);

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
];

export interface SandboxArgsOptions {
  systemDirs: string[];
  /** Where the runtime wrote GENERATED_ETC. */
  generatedEtc: string;
  workspace: string;
  network: boolean;
}

export function sandboxArgs(options: SandboxArgsOptions): string[] {
  const etc = options.network ? [...HOST_ETC, 'resolv.conf'] : HOST_ETC;
  return [
    // Every namespace; the network one only when the operator did not ask for the host's.
    '--unshare-all',
    ...(options.network ? ['--share-net'] : []),
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
    ...etc.flatMap((name) => ['--ro-bind-try', `/etc/${name}`, `/etc/${name}`]),
    ...GENERATED.flatMap((name) => ['--ro-bind', join(options.generatedEtc, name), `/etc/${name}`]),
    '--proc', '/proc',
    ...DEV,
    '--tmpfs', '/tmp',
    '--bind', options.workspace, WORKSPACE,
    '--chdir', WORKSPACE,
  ];
}
