import { access, constants } from 'node:fs/promises';
import { join } from 'node:path';

// The host programs the runtime drives, found once by absolute path: they run as root, so a PATH
// lookup at each spawn would be both slower and easier to subvert.

export interface Programs {
  bwrap: string;
  nsenter: string;
}

const SYSTEM_PATH = ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin'];

/** Both programs, or undefined when this host lacks either. */
export async function findPrograms(): Promise<Programs | undefined> {
  const [bwrap, nsenter] = await Promise.all([find('bwrap'), find('nsenter')]);
  return bwrap && nsenter ? { bwrap, nsenter } : undefined;
}

async function find(name: string): Promise<string | undefined> {
  const dirs = [...SYSTEM_PATH, ...(process.env.PATH ?? '').split(':').filter((dir) => dir.startsWith('/'))];
  for (const dir of dirs) {
    const path = join(dir, name);
    if (await access(path, constants.X_OK).then(() => true, () => false)) return path;
  }
  return undefined;
}
