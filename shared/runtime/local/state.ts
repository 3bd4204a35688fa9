import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// state.json: what any Paddock process needs to find a sandbox's processes again.

export interface SandboxState {
  id: string;
  accountId: string;
  /** The sandbox's init (pid 1 inside), as the host sees it. */
  pid: number;
  /** From /proc/<pid>/stat: tells the init from a later process that reuses its pid. */
  startTime: string;
  hostUid: number;
  createdAt: string;
}

const stateFile = (dir: string): string => join(dir, 'state.json');

/** The recorded state; undefined while the sandbox is being created (or its creator died). */
export async function readState(dir: string): Promise<SandboxState | undefined> {
  try {
    return JSON.parse(await readFile(stateFile(dir), 'utf8')) as SandboxState;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Written once the sandbox runs; the rename means a reader sees the whole file or none. */
export async function writeState(dir: string, state: SandboxState): Promise<void> {
  const temporary = `${stateFile(dir)}.${process.pid}`;
  await writeFile(temporary, JSON.stringify(state), { mode: 0o600 });
  await rename(temporary, stateFile(dir));
}
