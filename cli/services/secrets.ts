import type { Secret, SecretInjection } from '../api/types.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { askNonEmpty } from '../terminal/prompt.ts';
import { readStdinValue, stdinIsPiped } from '../terminal/stdin.ts';

/**
 * A secret's value, from standard input when it is piped, else from a hidden prompt: never from
 * an argument, so that it stays out of shell history and process listings.
 */
export async function secretValue(name: string): Promise<string> {
  if (stdinIsPiped()) {
    const value = await readStdinValue();
    if (!value) throw new CliError('The secret value read from standard input is empty.', { exitCode: EXIT_USAGE });
    return value;
  }
  return askNonEmpty(`Value of ${name}: `, { what: `The value of ${name}`, instead: 'the value on standard input (e.g. `printf %s "$VALUE" | paddock secrets create NAME`)', hidden: true });
}

export interface InjectFlags {
  injectHost?: string[];
  injectHeader?: string;
  injectFormat?: string;
}

/**
 * What the --inject-* flags say of a secret's brokering; undefined when none is given. Sent as
 * given, the API's checks being the only ones (a header or format alone is refused there, for its
 * missing --inject-host).
 */
export function injectionFromFlags(flags: InjectFlags): SecretInjection | undefined {
  const { injectHost, injectHeader, injectFormat } = flags;
  if (injectHost === undefined && injectHeader === undefined && injectFormat === undefined) return undefined;
  return { hosts: injectHost ?? [], ...(injectHeader !== undefined && { header: injectHeader }), ...(injectFormat !== undefined && { format: injectFormat }) };
}

/** Where a secret goes: the hosts it is brokered to, or `env` for an environment variable. */
export function secretDelivery(secret: Pick<Secret, 'inject'>): string {
  return secret.inject ? secret.inject.hosts.join(',') : 'env';
}
