import { spawn } from 'node:child_process';
import { once } from 'node:events';

// nft run in a sandbox's network namespace, by the runtime (its filter, network.ts) and by the
// host's resolver (the addresses it opens, egress-resolver-main.ts).

/** The environment of the host programs run for a sandbox's network: nothing of their starter's, which holds the API's secrets. */
export const NETWORK_PROGRAM_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' };

/** How much of nft's output, and of what it says on stderr, is kept. */
const OUTPUT_KEPT = 16_384;

/**
 * nft run in the namespace, named by its path (`/proc/<pid>/ns/net`) or by a descriptor open on
 * it, once it has exited and its output is read: its exit code, and the first 16 KiB of its output
 * and of what it said on stderr.
 */
export async function nftIn(
  programs: { nsenter: string; nft: string },
  netns: string | number,
  args: string[],
  input?: string,
): Promise<{ code: number | null; out: string; said: string }> {
  const byDescriptor = typeof netns === 'number';
  const nft = spawn(programs.nsenter, [`--net=${byDescriptor ? '/proc/self/fd/3' : netns}`, '--', programs.nft, ...args], {
    cwd: '/',
    env: NETWORK_PROGRAM_ENV,
    stdio: ['pipe', 'pipe', 'pipe', ...(byDescriptor ? [netns] : [])],
  });
  let out = '';
  let said = '';
  nft.stdout!.on('data', (chunk: Buffer) => {
    if (out.length < OUTPUT_KEPT) out += String(chunk);
  });
  nft.stderr!.on('data', (chunk: Buffer) => {
    if (said.length < OUTPUT_KEPT) said += String(chunk);
  });
  nft.stdin!.on('error', () => undefined);
  nft.stdin!.end(input ?? '');
  const [code] = (await Promise.race([once(nft, 'close'), once(nft, 'error').then(([err]) => Promise.reject(err as Error))])) as [number | null];
  return { code, out, said };
}
