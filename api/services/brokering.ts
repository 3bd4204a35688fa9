import type { Pool } from 'pg';
import type { Logger } from '../../shared/logger.ts';
import type { BrokeredCredential } from '../../shared/network/brokered.ts';
import { activeSandboxIdsOf } from '../../shared/repositories/sandboxes.ts';
import { SandboxGoneError, type SandboxRuntime } from '../../shared/runtime/types.ts';
import { openedSecretsFor, type SecretOpening } from './secrets.ts';

// Brokered secrets (shared/network/brokered.ts) reach the sandbox's egress, held by the runtime,
// never the sandbox. The egress's copy is replaced whole each time: before a program starts, and
// after a change of the secrets that adds, alters or removes a brokered one.

/**
 * Before a program starts in the sandbox (an exec, a background process, a terminal): its egress
 * holds the credentials of the secrets read for this start, whatever it missed meanwhile (a
 * runtime's egress started anew). None to send, nothing is sent: a change that left none was sent
 * when it was made (rebroker).
 */
export async function brokerBeforeStart(runtime: Pick<SandboxRuntime, 'broker'>, sandboxId: string, brokered: readonly BrokeredCredential[]): Promise<void> {
  if (brokered.length > 0 && runtime.broker) await runtime.broker(sandboxId, brokered);
}

export type Rebrokering = SecretOpening & { pg: Pool; runtime: Pick<SandboxRuntime, 'broker'>; log: Pick<Logger, 'error'> };

/**
 * After a brokered secret was written or deleted (or an ordinary one written over it): the
 * sandboxes it reaches (its own; every active one of the account for an account-wide one) get
 * their credentials anew, read fresh, so that programs already running use the change, and a
 * credential removed stops being sent. A failure is logged and not the request's: the secret
 * itself is stored, and the next start in the sandbox sends what it has then.
 */
export async function rebroker(deps: Rebrokering, accountId: string, sandboxId: string | null): Promise<void> {
  if (!deps.runtime.broker) return;
  const ids = sandboxId ? [sandboxId] : await activeSandboxIdsOf(deps.pg, accountId);
  await Promise.all(
    ids.map(async (id) => {
      try {
        const opened = await openedSecretsFor(deps, accountId, id);
        await deps.runtime.broker!(id, opened.brokered);
      } catch (err) {
        // A sandbox gone meanwhile has no egress left to hold them.
        if (err instanceof SandboxGoneError) return;
        deps.log.error({ err, accountId, sandboxId: id }, "brokered credentials not sent to the sandbox's egress after a change of its secrets");
      }
    }),
  );
}
