import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../../logger.ts';

// The agent is C, built from its source by the host's C compiler the first time a runtime needs
// it (npm install builds it too: scripts/build-agent.ts), into a cache named by the source's
// hash, so a changed source is never run as an old binary. Without a compiler the runtime goes on
// without it: commands run through nsenter, as they did before the agent.

const SOURCE = fileURLToPath(new URL('./paddock-agent.c', import.meta.url));
const CACHE = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../../node_modules/.cache/paddock-agent');

let built: Promise<string | undefined> | undefined;

/** The agent binary's path, built if need be; undefined when this host cannot build it. */
export function agentBinary(log?: Logger): Promise<string | undefined> {
  built ??= build().catch((err: unknown) => {
    log?.warn({ err }, 'could not build the sandbox agent (is a C compiler installed?): commands run through nsenter instead');
    return undefined;
  });
  return built;
}

export async function build(cache = CACHE): Promise<string> {
  const source = await readFile(SOURCE);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const binary = join(cache, `paddock-agent-${hash}`);
  if (await access(binary).then(() => true, () => false)) return binary;
  await mkdir(cache, { recursive: true });
  const temporary = `${binary}.${process.pid}.tmp`;
  try {
    await compile(['-O2', '-Wall', '-Wextra', '-o', temporary, SOURCE]);
    // Another process may have built the same bytes meanwhile: the rename makes either one whole.
    await rename(temporary, binary);
  } finally {
    await rm(temporary, { force: true });
  }
  return binary;
}

function compile(args: string[]): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(process.env.CC ?? 'cc', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let said = '';
    child.stderr.on('data', (chunk: Buffer) => (said = (said + chunk.toString()).slice(-4000)));
    child.once('error', fail);
    child.once('exit', (code) => (code === 0 ? done() : fail(new Error(`cc exited with ${code}: ${said.trim()}`))));
  });
}
