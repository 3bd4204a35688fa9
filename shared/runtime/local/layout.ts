import { createHash } from 'node:crypto';
import { chmod, mkdir, realpath, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { PermanentRuntimeError } from '../types.ts';
import { GENERATED_ETC, runningAsRoot } from './identity.ts';

// Where a runtime keeps things under its dataDir:
//   etc/                     files generated into every sandbox's /etc (passwd, group, hosts, resolv.conf)
//   sandboxes/<id>/          one sandbox: state.json, init.log (bubblewrap's own errors), network.log
//   sandboxes/<id>/workspace the sandbox's /workspace, owned by its host uid

const ID = /^[a-z0-9]+_[a-z0-9]+$/;

export function isSandboxId(id: string): boolean {
  return ID.test(id);
}

export interface Layout {
  etc: string;
  sandboxes: string;
  /** Destroyed sandboxes' directories, renamed here at once and removed afterwards. */
  trash: string;
  /** Names this dataDir for host-wide locks: two runtimes on one dataDir share them. */
  lockPrefix: string;
  /** The host's resolver for sandboxes' domain rules (egress-resolver-process.ts): its control socket, root's alone, and its log. */
  resolver: { socket: string; log: string };
}

export const sandboxDir = (layout: Layout, id: string): string => join(layout.sandboxes, id);
export const workspaceDir = (layout: Layout, id: string): string => join(layout.sandboxes, id, 'workspace');
export const diskImage = (layout: Layout, id: string): string => join(layout.sandboxes, id, 'disk.img');
export const initLogFile = (layout: Layout, id: string): string => join(layout.sandboxes, id, 'init.log');
/** The socket of the sandbox's agent (its init): only root reaches it, and nothing inside. */
export const agentSocket = (layout: Layout, id: string): string => join(layout.sandboxes, id, 'agent.sock');
export const networkLogFile = (layout: Layout, id: string): string => join(layout.sandboxes, id, 'network.log');
/** The files of a sandbox's egress (egress-resolver-process.ts), root's alone. */
export interface EgressFiles {
  /** The installed policy and its tag (egress-filter.ts's InstalledPolicy). */
  policy: string;
  /** How many names the resolver refused. */
  refused: string;
}

export const egressFiles = (layout: Layout, id: string): EgressFiles => ({
  policy: join(layout.sandboxes, id, 'egress-policy.json'),
  refused: join(layout.sandboxes, id, 'egress-dns-refused'),
});

export async function prepareLayout(dataDir: string): Promise<Layout> {
  await mkdir(dataDir, { recursive: true });
  const root = await realpath(dataDir);
  const layout: Layout = {
    etc: join(root, 'etc'),
    sandboxes: join(root, 'sandboxes'),
    trash: join(root, 'trash'),
    lockPrefix: `paddock-local/${createHash('sha256').update(root).digest('hex').slice(0, 16)}`,
    resolver: { socket: join(root, 'egress-resolver.sock'), log: join(root, 'egress-resolver.log') },
  };
  if (runningAsRoot) await openPathToSandboxUsers(root);
  // 0711 everywhere on the way to a workspace: each sandbox's unprivileged uid must reach its own,
  // but no one may list the others.
  await mkdir(layout.sandboxes, { recursive: true });
  await chmod(layout.sandboxes, 0o711);
  await mkdir(layout.etc, { recursive: true });
  await chmod(layout.etc, 0o755);
  for (const [name, content] of Object.entries(GENERATED_ETC)) {
    // Every runtime writes the same bytes; the rename keeps a reader from seeing half a file.
    const temporary = join(layout.etc, `.${name}.${process.pid}`);
    await writeFile(temporary, content, { mode: 0o644 });
    await chmod(temporary, 0o644);
    await rename(temporary, join(layout.etc, name));
  }
  return layout;
}

/**
 * Bubblewrap runs as the sandbox's unprivileged uid and opens the workspace by path, so every
 * directory above it must be searchable by others. The dataDir itself is Paddock's to open up
 * (a mkdtemp directory is 0700); a parent that is not is a setup error worth a clear message.
 */
async function openPathToSandboxUsers(root: string): Promise<void> {
  const mode = (await stat(root)).mode;
  if ((mode & 0o001) === 0) await chmod(root, (mode & 0o7777) | 0o001);
  for (let dir = dirname(root); ; dir = dirname(dir)) {
    if (((await stat(dir)).mode & 0o001) === 0) {
      throw new PermanentRuntimeError(
        `the local runtime's data directory ${root} is not reachable by unprivileged users: ` +
          `${dir} is not searchable by others (chmod o+x it, or move the data directory)`,
      );
    }
    if (dir === dirname(dir)) return;
  }
}
