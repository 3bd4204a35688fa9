import { createHash } from 'node:crypto';

// Who runs inside a sandbox, and which host user that is.

/** The user inside every sandbox, as its generated /etc/passwd names it. */
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;
export const WORKSPACE = '/workspace';

/** Everything a sandboxed command inherits: nothing of the host process's environment. */
export const SANDBOX_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: WORKSPACE,
  LANG: 'C.UTF-8',
  TERM: 'dumb',
};

// Host uids for sandboxes when Paddock runs as root: far above the ranges distributions give to
// people and to /etc/subuid, and wide enough that two live sandboxes rarely share one.
const HOST_UID_BASE = 1_000_000_000;
const HOST_UID_SPAN = 1 << 24;

export const runningAsRoot = process.getuid?.() === 0;

/**
 * The host uid (and gid) that owns a sandbox's processes and files. As root each sandbox gets its
 * own unprivileged uid, derived from the id so that any Paddock process finds the same one; it is
 * never 0. Otherwise (a developer's machine) it is the current user.
 */
export function hostUidFor(id: string): number {
  if (!runningAsRoot) return process.getuid?.() ?? SANDBOX_UID;
  const digest = createHash('sha256').update(id).digest();
  return HOST_UID_BASE + (digest.readUInt32BE(0) % HOST_UID_SPAN);
}

/** Files generated into every sandbox's /etc, in place of the host's. */
export const GENERATED_ETC: Readonly<Record<string, string>> = {
  passwd: [
    'root:x:0:0:root:/root:/usr/sbin/nologin',
    `sandbox:x:${SANDBOX_UID}:${SANDBOX_GID}:sandbox:${WORKSPACE}:/bin/sh`,
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
    '',
  ].join('\n'),
  group: ['root:x:0:', `sandbox:x:${SANDBOX_GID}:`, 'nogroup:x:65534:', ''].join('\n'),
  hosts: ['127.0.0.1 localhost sandbox', '::1 localhost ip6-localhost ip6-loopback', ''].join('\n'),
  // slirp4netns's forwarder to the host's resolvers (egress-filter.ts's SLIRP.dns), the one
  // resolver a sandbox with network reaches; without network, nothing answers there.
  'resolv.conf': 'nameserver 10.0.2.3\n',
};
