import type { Redis } from 'ioredis';
import type { Pool } from 'pg';
import type { Logger } from '../logger.ts';
import type { BrokeredCredential } from '../network/brokered.ts';
import { activeSandboxIdsOf, findSandbox } from '../repositories/sandboxes.ts';
import { SandboxGoneError, type SandboxRuntime } from '../runtime/types.ts';
import type { OpenedSecrets } from './opened.ts';
import { openedSecretsFor, type SecretOpening } from './opening.ts';

// Brokered secrets (shared/network/brokered.ts) reach the sandbox's egress, held by the runtime,
// never the sandbox. The egress's copy is replaced whole each time: before a program starts, and
// after a change of the secrets that adds, alters or removes a brokered one.
//
// Two such sends from two processes may land in either order: a start that read the secrets just
// before a change could land after the change's own send, and put back a credential just removed.
// So each send reads the secrets' version again once it has landed, and sends anew when it
// changed meanwhile: the last send to land is then one of the newest version.

/** At most this many sends for one start or change: each further one means yet another change came meanwhile. */
const SENDS_AT_MOST = 4;

/** The credentials of one version of the secrets, and how to read them afresh. */
export interface Brokering {
  version: string | null;
  credentials: readonly BrokeredCredential[];
  reread(): Promise<Pick<OpenedSecrets, 'version' | 'brokered'>>;
}

/** For a command of Paddock's own: nothing to send. */
export const NO_BROKERING: Brokering = { version: null, credentials: [], reread: () => Promise.resolve({ version: null, brokered: [] }) };

/** Sends `brokering`'s credentials, then those of each newer version that came meanwhile. */
async function sendConfirmed(broker: NonNullable<SandboxRuntime['broker']>, sandboxId: string, brokering: Brokering): Promise<void> {
  let sent: Pick<Brokering, 'version' | 'credentials'> = brokering;
  for (let sends = 1; ; sends++) {
    await broker(sandboxId, sent.credentials);
    if (sends >= SENDS_AT_MOST) return;
    const fresh = await brokering.reread();
    if (fresh.version === sent.version) return;
    sent = { version: fresh.version, credentials: fresh.brokered };
  }
}

/**
 * Before a program starts in the sandbox (an exec, a background process, a terminal): its egress
 * holds the credentials of the secrets read for this start, whatever it missed meanwhile (a
 * runtime's egress started anew), or of a newer version. None to send, nothing is sent: a change
 * that left none was sent when it was made (rebroker).
 */
export async function brokerBeforeStart(runtime: Pick<SandboxRuntime, 'broker'>, sandboxId: string, brokering: Brokering): Promise<void> {
  if (brokering.credentials.length > 0 && runtime.broker) await sendConfirmed(runtime.broker, sandboxId, brokering);
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
        const reread = () => openedSecretsFor(deps, accountId, id);
        const opened = await reread();
        await sendConfirmed(deps.runtime.broker!, id, { version: opened.version, credentials: opened.brokered, reread });
      } catch (err) {
        // A sandbox gone meanwhile has no egress left to hold them.
        if (err instanceof SandboxGoneError) return;
        deps.log.error({ err, accountId, sandboxId: id }, "brokered credentials not sent to the sandbox's egress after a change of its secrets");
      }
    }),
  );
}

// A sandbox's egress that was started again lost the credentials it held (the runtime's sweep
// says so: EgressSweep.uncredentialed). The workers' sweep finds them, but a worker never holds
// the secrets' key: it lists them in Redis, and an API process takes each (SPOP: one process
// each) and sends them again, so that programs already running are not left without them until
// the next start.

/** Sandboxes taken off the list a turn, by one API process. */
const RESENDS_A_TURN = 32;
/** The list lapses if no API process takes it (none running): the next sweep lists them again. */
const RESEND_LIST_MS = 5 * 60_000;

const resendKey = (prefix: string) => `${prefix}:egress:uncredentialed`;

/** The workers' half: these sandboxes' egress needs their credentials again. */
export async function askResend(redis: Pick<Redis, 'sadd' | 'pexpire'>, prefix: string, sandboxIds: readonly string[]): Promise<void> {
  if (sandboxIds.length === 0) return;
  await redis.sadd(resendKey(prefix), ...sandboxIds);
  await redis.pexpire(resendKey(prefix), RESEND_LIST_MS);
}

/** The API's half: every `everyMs`, takes what the list holds and sends each sandbox's credentials again; stop() ends it. */
export function startResends(deps: Rebrokering & { redis: Pick<Redis, 'spop'> }, prefix: string, everyMs: number): { stop(): void } {
  let running = false;
  const turn = async () => {
    if (running) return;
    running = true;
    try {
      const ids = await deps.redis.spop(resendKey(prefix), RESENDS_A_TURN);
      for (const id of ids) {
        const sandbox = await findSandbox(deps.pg, id);
        // A sandbox no longer active needs none.
        if (sandbox?.state === 'active') await rebroker(deps, sandbox.accountId, id);
      }
    } catch (err) {
      deps.log.error({ err }, 'brokered credentials not sent again to egress that lost them');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void turn(), everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
