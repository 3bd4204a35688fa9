import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// What any Paddock process needs to find a sandbox's processes again: state.json while the
// sandbox is meant to run, renamed to ending.json once destroy has begun, so that nothing takes
// a sandbox in its last moments (whose init may not have died yet) for a running one.

export interface SandboxState {
  id: string;
  accountId: string;
  /** The sandbox's init (pid 1 inside), as the host sees it. */
  pid: number;
  /** From /proc/<pid>/stat: tells the init from a later process that reuses its pid. */
  startTime: string;
  hostUid: number;
  createdAt: string;
  /** The init is the agent (agent/paddock-agent.c): commands start through its socket. */
  agent?: boolean;
  /** slirp4netns, for a sandbox with network: outside the namespace, so killed on its own. */
  network?: { pid: number; startTime: string };
}

export interface Recorded {
  state: SandboxState;
  ending: boolean;
}

const LIVE = 'state.json';
const ENDING = 'ending.json';

/** The recorded state; undefined while the sandbox is being created (or its creator died). */
export async function readState(dir: string): Promise<Recorded | undefined> {
  const live = await readJson(join(dir, LIVE));
  if (live) return { state: live, ending: false };
  const ending = await readJson(join(dir, ENDING));
  return ending && { state: ending, ending: true };
}

/** Written once the sandbox runs; the rename means a reader sees the whole file or none. */
export async function writeState(dir: string, state: SandboxState): Promise<void> {
  const temporary = join(dir, `.${LIVE}.${process.pid}`);
  await writeFile(temporary, JSON.stringify(state), { mode: 0o600 });
  await rename(temporary, join(dir, LIVE));
}

export async function markEnding(dir: string): Promise<void> {
  await rename(join(dir, LIVE), join(dir, ENDING)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

async function readJson(path: string): Promise<SandboxState | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as SandboxState;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
