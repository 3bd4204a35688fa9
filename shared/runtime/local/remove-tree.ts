import { chmod, mkdir, readdir, rename } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../logger.ts';
import { runningAsRoot } from './identity.ts';
import { HostCommandError, type HostCommand } from './spawner.ts';

/**
 * Removes a sandbox's files: GNU rm, which walks with openat and unlinkat, so a tree deeper than
 * PATH_MAX or holding millions of entries is removed in bounded memory (Node's recursive rm builds
 * every path as a string, fails past PATH_MAX, and holds the walk in memory). It never crosses
 * into another file system: a mount left inside is not followed. Root removes anything; a
 * developer running Paddock as themself may meet directories the sandbox made unwritable (chmod
 * 500), which they own and can open up first. `rm` is the spawner's host command: the worker
 * forks nothing for a destroy either. One the spawner's end cuts short leaves the rest in the
 * trash, for the next sweep.
 */
async function removeTree(run: HostCommand, dir: string): Promise<void> {
  const rmRf = () => run('rm', ['-rf', '--one-file-system', '--', dir]);
  try {
    await rmRf();
  } catch (err) {
    if (!(err instanceof HostCommandError)) throw err;
    if (!runningAsRoot) await openUp(dir).catch(() => undefined);
    await rmRf();
  }
}

async function openUp(dir: string): Promise<void> {
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) await openUp(join(dir, entry.name));
  }
}

/**
 * Takes a sandbox's directory out of the runtime's view at once (a rename) and removes it
 * afterwards: a destroy finishes once nothing of the sandbox runs, however large its tree, and a
 * tree that cannot be removed now is retried by the next sweep (sweepTrash) instead of holding the
 * sandbox, and its account's quota, in `terminating`. Answers the removal, which never rejects
 * (wrapped: an async function would wait for a promise it returned): a runtime that closes waits
 * for it rather than cut it short.
 */
export async function discard(run: HostCommand, dir: string, trash: string, log: Logger | undefined): Promise<{ removed: Promise<void> }> {
  await mkdir(trash, { recursive: true, mode: 0o700 });
  const target = join(trash, `${basename(dir)}.${randomBytes(4).toString('hex')}`);
  try {
    await rename(dir, target);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { removed: Promise.resolve() };
    throw err;
  }
  return { removed: removeTree(run, target).catch((err: unknown) => log?.warn({ err, dir: target }, 'a destroyed sandbox’s files are left for the next sweep')) };
}

/** Removes what earlier destroys left in the trash (a crash, or a tree that resisted). */
export async function sweepTrash(run: HostCommand, trash: string, log: Logger | undefined): Promise<void> {
  const entries = await readdir(trash).catch(() => [] as string[]);
  for (const name of entries) {
    await removeTree(run, join(trash, name)).catch((err: unknown) => log?.warn({ err, name }, 'could not remove a destroyed sandbox’s files'));
  }
}
