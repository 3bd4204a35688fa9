import { readFile, rmdir } from 'node:fs/promises';
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

/** Formats and mounts the sandbox's disk at `workspace` (an empty directory), owned by `uid`. */
export async function mountDisk(run: HostCommand, image: string, workspace: string, limits: DiskLimits, uid: number): Promise<void> {
  await run('truncate', ['-s', `${limits.megabytes}M`, image]);
  try {
    // No journal (a sandbox's files live for 30 minutes, and a crash ends the sandbox anyway), no
    // reserved blocks, and the root directory already the sandbox user's.
    await run('mkfs.ext4', ['-q', '-F', '-O', '^has_journal', '-m', '0', '-N', String(limits.inodes), '-E', `root_owner=${uid}:${uid},lazy_itable_init=1,nodiscard`, image]);
    await run('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', image, workspace]);
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

async function isMountPoint(path: string): Promise<boolean> {
  const table = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  // Field 5 is the mount point, with spaces and the like escaped as octal.
  const escaped = path.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
  return table.split('\n').some((line) => line.split(' ')[4] === escaped);
}
