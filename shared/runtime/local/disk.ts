import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PermanentRuntimeError } from '../types.ts';
import { HostCommandError, SpawnerGoneError, type HostCommand } from './spawner.ts';

// A disk of its own for each sandbox: a sparse file formatted ext4 on a loop device, mounted on
// the sandbox's workspace in a mount namespace of that sandbox's alone (launch.ts), never the
// host's, before bubblewrap binds it. Its size and its inode count are hard limits (a write past
// them fails with ENOSPC inside, and nothing lands on the host's file system outside the image),
// a sparse image holds no more of the host's disk than what was written, and a destroy removes
// one file, however many the sandbox made. Off the host's mount table because every namespace
// bubblewrap makes starts as a copy of the one it is made in: with each sandbox's disk mounted
// on the host, a start took some 20 ms more for every thousand sandboxes live.

export interface DiskLimits {
  megabytes: number;
  /** Files and directories the disk can hold. */
  inodes: number;
}

/**
 * Formats the sandbox's disk and attaches it to a loop device (losetup's: the kernel's first free
 * one, at once, not `mount -o loop`'s search of every loop device's sysfs entry for one already
 * backed by the file); the device's path. The launch mounts it (launch.ts, DISK_MOUNT) and
 * detaches it then, so the kernel frees it with the last unmount, the namespace's end (autoclear).
 */
export async function attachDisk(run: HostCommand, image: string, limits: DiskLimits, uid: number): Promise<string> {
  await run('truncate', ['-s', `${limits.megabytes}M`, image]);
  try {
    // No journal (a sandbox's files live for 30 minutes, and a crash ends the sandbox anyway), no
    // reserved blocks, and the root directory already the sandbox user's.
    await run('mkfs.ext4', ['-q', '-F', '-O', '^has_journal', '-m', '0', '-N', String(limits.inodes), '-E', `root_owner=${uid}:${uid},lazy_itable_init=1,nodiscard`, image]);
    const { stdout } = await run('losetup', ['--find', '--show', '--', image]);
    const device = stdout.trim();
    if (!/^\/dev\/loop[0-9]+$/.test(device)) throw new Error(`losetup named no loop device: ${JSON.stringify(device)}`);
    return device;
  } catch (err) {
    // A spawner that died under the commands is not the host's answer: the job's retry starts another.
    if (err instanceof SpawnerGoneError) throw err;
    const said = err instanceof HostCommandError ? err.stderr.trim() : '';
    throw new PermanentRuntimeError(`the sandbox's disk could not be made (${said || (err as Error).message}); PADDOCK_LOCAL_DISK_MB=0 runs sandboxes without a disk quota`);
  }
}

/**
 * Detaches the loop devices still backed by the sandbox's image: a start that failed before its
 * mount leaves its device attached (once mounted, the kernel frees it by itself). Idempotent.
 */
export async function detachDisk(run: HostCommand, image: string): Promise<void> {
  const listed = await run('losetup', ['--associated', image, '--noheadings', '--output', 'NAME']).catch(() => undefined);
  for (const device of (listed?.stdout ?? '').split('\n').map((l) => l.trim()).filter((l) => /^\/dev\/loop[0-9]+$/.test(l))) {
    await run('losetup', ['-d', device]).catch(() => undefined);
  }
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
