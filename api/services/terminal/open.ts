import type { Socket } from 'node:net';
import type { TerminalSession } from '../../../shared/runtime/types.ts';
import type { AppDeps } from '../../context.ts';
import type { KeySession } from '../../auth/key-sessions.ts';
import { TerminalBridge, CLOSE } from './bridge.ts';
import { destroyReasonOf } from '../../../shared/repositories/sandboxes.ts';
import type { PreparedTerminal } from './prepare.ts';
import { brokerBeforeStart } from '../../../shared/secrets/brokering.ts';

/** Open terminals of this process: a shutdown closes them (1001), as it ends event streams. */
const open = new Set<TerminalBridge>();

export function closeTerminals(): void {
  for (const bridge of open) bridge.close(CLOSE.shutdown, 'the server is shutting down; reconnect');
}

/**
 * Opens the runtime terminal before the upgrade is answered, so a sandbox that cannot run one is
 * a problem document, not a 101 and a close. Until the bridge is attached its output waits (the
 * runtime reads no more); a client that leaves meanwhile ends the terminal.
 */
export async function openTerminal(
  deps: Pick<AppDeps, 'runtime' | 'outputBudget' | 'pg' | 'log'> & { config: Pick<AppDeps['config'], 'PADDOCK_TERMINAL_IDLE_SECONDS'> },
  sandboxId: string,
  prepared: PreparedTerminal,
  size: { cols: number; rows: number },
  socket: Socket,
  session: KeySession | undefined,
): Promise<{ bridge: TerminalBridge; session: TerminalSession }> {
  const bridge = new TerminalBridge({
    idleMs: deps.config.PADDOCK_TERMINAL_IDLE_SECONDS * 1000,
    session,
    masks: prepared.masks,
    pace: (bytes) => deps.outputBudget.spend(prepared.accountId, bytes),
    goneReason: async () => {
      const reason = await destroyReasonOf(deps.pg, sandboxId).catch(() => undefined);
      return reason ? `sandbox destroyed (${reason})` : 'sandbox destroyed or no longer running';
    },
    onError: (err) => deps.log.error({ err, sandboxId }, 'terminal failed'),
  });
  session?.onRevoked(() => bridge.close(CLOSE.revoked, 'the API key was revoked'));
  open.add(bridge);
  bridge.signal.addEventListener('abort', () => open.delete(bridge), { once: true });
  const leave = () => bridge.end();
  socket.once('close', leave);
  try {
    const { argv, env } = prepared;
    await brokerBeforeStart(deps.runtime, sandboxId, prepared.brokering);
    const session = await deps.runtime.terminal(sandboxId, { argv, env, ...size, signal: bridge.signal, onOutput: bridge.output });
    return { bridge, session };
  } catch (err) {
    bridge.end();
    throw err;
  }
}
