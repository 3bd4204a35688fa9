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
