import { fstatSync } from 'node:fs';

/** True when standard input is open and not a terminal: a pipe, a file, or /dev/null. */
export function stdinIsPiped(): boolean {
  if (process.stdin.isTTY) return false;
  try {
    fstatSync(0);
    return true;
  } catch {
    return false; // closed
  }
}

/** All of standard input, up to its end. */
export async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}

/** One value from standard input (a password, a secret): its text without the final line break. */
export async function readStdinValue(): Promise<string> {
  return (await readStdin()).toString('utf8').replace(/\r?\n$/, '');
}
