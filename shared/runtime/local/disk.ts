import { rmdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PermanentRuntimeError } from '../types.ts';
import { HostCommandError, SpawnerGoneError, type HostCommand } from './spawner.ts';

// A disk of its own for each sandbox: a sparse file formatted ext4, loop-mounted on the sandbox's
// workspace before bubblewrap binds it. Its size and its inode count are hard limits (a write
// past them fails with ENOSPC inside, and nothing lands on the host's file system outside the
// image), a sparse image holds no more of the host's disk than what was written, and a destroy
// removes one file, however many the sandbox made.

export interface DiskLimits {
  megabytes: number;
  /** Files and directories the disk can hold. */
  inodes: number;
}

/**
 * The loop device is losetup's (the kernel's first free one, at once), not `mount -o loop`'s, which
 * first looks for one already backed by the same file by reading every loop device's sysfs entry:
 * about 37 µs each, 40 ms of every create with 1,000 sandboxes live. Detached once mounted, the
 * kernel frees it with the last unmount (autoclear), as `mount -o loop` has it.
 */
const LOOP_MOUNT =
  'dev=$(losetup --find --show -- "$1") || exit 1; ' +
  'mount -t ext4 -o nosuid,nodev,noatime "$dev" "$2"; r=$?; losetup -d "$dev"; exit $r';

/** Formats and mounts the sandbox's disk at `workspace` (an empty directory), owned by `uid`. */
export async function mountDisk(run: HostCommand, image: string, workspace: string, limits: DiskLimits, uid: number): Promise<void> {
  await run('truncate', ['-s', `${limits.megabytes}M`, image]);
  try {
    // No journal (a sandbox's files live for 30 minutes, and a crash ends the sandbox anyway), no
    // reserved blocks, and the root directory already the sandbox user's.
    await run('mkfs.ext4', ['-q', '-F', '-O', '^has_journal', '-m', '0', '-N', String(limits.inodes), '-E', `root_owner=${uid}:${uid},lazy_itable_init=1,nodiscard`, image]);
    await run('/bin/sh', ['-c', LOOP_MOUNT, 'paddock-mount', image, workspace]);
  } catch (err) {
    // A spawner that died under the commands is not the host's answer: the job's retry starts another.
    if (err instanceof SpawnerGoneError) throw err;
    const said = err instanceof HostCommandError ? err.stderr.trim() : '';
    throw new PermanentRuntimeError(`the sandbox's disk could not be made (${said || (err as Error).message}); PADDOCK_LOCAL_DISK_MB=0 runs sandboxes without a disk quota`);
  }
  // mkfs's lost+found is no file of the user's.
  await rmdir(`${workspace}/lost+found`).catch(() => undefined);
}

/** Unmounts the sandbox's disk if it is mounted (the loop device goes with it); idempotent. */
export async function unmountDisk(run: HostCommand, workspace: string): Promise<void> {
  if (!(await isMountPoint(workspace))) return;
  try {
    await run('umount', [workspace]);
  } catch {
    // Something still holds it (a process in the middle of dying): detach it now, freed once let go.
    await run('umount', ['-l', workspace]).catch(() => undefined);
  }
}

/** A file system of its own is mounted there: another device than its parent's (not a read of the whole mount table, which grows with the sandboxes). */
async function isMountPoint(path: string): Promise<boolean> {
  const [own, parent] = await Promise.all([stat(path).catch(() => undefined), stat(dirname(path)).catch(() => undefined)]);
  return own !== undefined && parent !== undefined && own.dev !== parent.dev;
}
