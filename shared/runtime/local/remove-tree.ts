import { chmod, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { runningAsRoot } from './identity.ts';

/**
 * Removes a sandbox's files. Root removes anything; a developer running Paddock as themself may
 * meet directories the sandbox made unwritable (chmod 500), which they own and can open up first.
 */
export async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch (err) {
    if (runningAsRoot || (err as NodeJS.ErrnoException).code !== 'EACCES') throw err;
    await openUp(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

async function openUp(dir: string): Promise<void> {
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) await openUp(join(dir, entry.name));
  }
}
