import type { Pool } from 'pg';
import { findOwnSandbox } from '../sandboxes.ts';
import { requireRunning } from '../../../shared/sandboxes/running.ts';

/** The caller's sandbox id when it runs: 404 for another account's or an unknown one, else 409. */
export async function runningSandboxId(pool: Pool, accountId: string, id: string): Promise<string> {
  const sandbox = await findOwnSandbox(pool, accountId, id);
  requireRunning(sandbox, 'files');
  return sandbox.id;
}
