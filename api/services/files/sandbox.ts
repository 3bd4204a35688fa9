import type { Pool } from 'pg';
import { ApiError } from '../../../shared/errors.ts';
import { findOwnSandbox } from '../sandboxes.ts';

/** The caller's sandbox id when it runs: 404 for another account's or an unknown one, else 409. */
export async function runningSandboxId(pool: Pool, accountId: string, id: string): Promise<string> {
  const sandbox = await findOwnSandbox(pool, accountId, id);
  if (sandbox.state !== 'active' || sandbox.status !== 'running') {
    throw new ApiError('sandbox_not_running', `Sandbox ${id} is ${sandbox.status}; files can be used only while it runs.`, {
      extra: { status: sandbox.status },
    });
  }
  return sandbox.id;
}
