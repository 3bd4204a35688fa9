import type { Sandbox } from '../db/entities.ts';
import { ApiError } from '../errors.ts';
import { SandboxGoneError } from '../runtime/types.ts';

// Everything done inside a sandbox (exec, its terminal, its background processes, its files)
// needs it running: checked on the row before the runtime is asked, and again by the runtime,
// which answers SandboxGoneError when the sandbox ended meanwhile. Both become one answer,
// 409 sandbox_not_running, worded for what was asked.

export type InSandboxUse = 'exec' | 'terminal' | 'processes' | 'files';

const USES: Record<InSandboxUse, { refused: string; withStatus: boolean; gone: string }> = {
  exec: { refused: 'commands run only while it is running', withStatus: false, gone: 'is no longer running' },
  terminal: { refused: 'a terminal opens only while it is running', withStatus: false, gone: 'is no longer running' },
  processes: { refused: 'its processes can be reached only while it runs', withStatus: true, gone: 'is no longer running' },
  files: { refused: 'files can be used only while it runs', withStatus: true, gone: 'is not running' },
};

/** Refuses (409) `use` of a sandbox that is not running. */
export function requireRunning(sandbox: Pick<Sandbox, 'id' | 'state' | 'status'>, use: InSandboxUse): void {
  if (sandbox.state === 'active' && sandbox.status === 'running') return;
  const { refused, withStatus } = USES[use];
  throw new ApiError('sandbox_not_running', `Sandbox ${sandbox.id} is ${sandbox.status}; ${refused}.`, withStatus ? { extra: { status: sandbox.status } } : {});
}

/** The runtime's error as the API answers it: a sandbox gone from under `use` is not running; anything else as it is. */
export function inSandboxError(err: unknown, sandboxId: string, use: InSandboxUse): unknown {
  return err instanceof SandboxGoneError ? new ApiError('sandbox_not_running', `Sandbox ${sandboxId} ${USES[use].gone}.`) : err;
}
