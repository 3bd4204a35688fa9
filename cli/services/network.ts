import type { PaddockClient } from '../api/index.ts';
import type { NetworkPolicy, Sandbox } from '../api/types.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';

/** What the flags say of a session's egress: `--egress none|all`, or `--allow <rule>` (repeatable); undefined for neither. */
export function policyFromFlags(flags: { egress?: string; allow?: string[] }): NetworkPolicy | undefined {
  const { egress, allow } = flags;
  if (egress !== undefined && allow?.length) {
    throw new CliError('Give --egress or --allow, not both: --allow lists the only places the session may reach.', { exitCode: EXIT_USAGE });
  }
  if (allow?.length) return { egress: { allow } };
  if (egress === undefined) return undefined;
  if (egress !== 'none' && egress !== 'all') throw new CliError('--egress is none or all (or list the places with --allow).', { exitCode: EXIT_USAGE });
  return { egress };
}

/** Where the session's programs may connect from now on. */
export function setSessionNetwork(client: PaddockClient, sessionId: string, policy: NetworkPolicy): Promise<Sandbox> {
  return client.setSandboxNetwork(sessionId, policy);
}
