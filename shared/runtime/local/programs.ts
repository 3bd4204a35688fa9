import { access, constants } from 'node:fs/promises';
import { join } from 'node:path';

// The host programs the runtime drives, found once by absolute path: they run as root, so a PATH
// lookup at each spawn would be both slower and easier to subvert.

export interface Programs {
  bwrap: string;
  nsenter: string;
  /** For sandboxes with network (PADDOCK_LOCAL_NETWORK); absent, those fail to start. */
  slirp4netns: string | undefined;
  nft: string | undefined;
  /** Mounts each sandbox's own devpts, for its terminals; absent, terminals fail. */
  mount: string | undefined;
  /** Opens the terminals' pseudo-terminals, inside the sandbox (which sees the host's /usr). */
  socat: string | undefined;
  /** A disk's mount in the sandbox's own mount namespace (disk.ts); all three, or no disk quota. */
  unshare: string | undefined;
  losetup: string | undefined;
  setpriv: string | undefined;
  /** Makes the egress's authority and its certificates (egress-ca.ts); absent, no credential is brokered. */
  openssl: string | undefined;
}

const SYSTEM_PATH = ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin'];

/** The programs, or undefined when this host lacks bubblewrap or nsenter. */
export async function findPrograms(): Promise<Programs | undefined> {
  const names = ['bwrap', 'nsenter', 'slirp4netns', 'nft', 'mount', 'socat', 'unshare', 'losetup', 'setpriv', 'openssl'];
  const [bwrap, nsenter, slirp4netns, nft, mount, socat, unshare, losetup, setpriv, openssl] = await Promise.all(names.map(find));
  return bwrap && nsenter ? { bwrap, nsenter, slirp4netns, nft, mount, socat, unshare, losetup, setpriv, openssl } : undefined;
}

async function find(name: string): Promise<string | undefined> {
  const dirs = [...SYSTEM_PATH, ...(process.env.PATH ?? '').split(':').filter((dir) => dir.startsWith('/'))];
  for (const dir of dirs) {
    const path = join(dir, name);
    if (await access(path, constants.X_OK).then(() => true, () => false)) return path;
  }
  return undefined;
}
