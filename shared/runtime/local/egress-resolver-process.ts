import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Upstream } from '../../network/resolvers.ts';
import type { InstalledPolicy } from './egress-filter.ts';
import type { AnsweredName } from './egress-resolver.ts';
import type { BrokeredCredential } from '../../network/brokered.ts';
import type { EgressFiles, Layout } from './layout.ts';
import { withLock } from './lock.ts';
import { readStat } from './processes.ts';
import { untilReady } from './ready-signal.ts';
import { NETWORK_PROGRAM_ENV } from './nft.ts';

// The host's resolver for sandboxes' domain rules (egress-resolver-main.ts) from a runtime's side:
// started by the first process that needs it, under a host-wide lock, and told over its control
// socket which sandboxes to serve; and the installed policy it reads, written where only root
// reads it. Any process of the host reaches it the same way, and one that finds it gone starts it
// again (the workers' sweep asks for every sandbox that needs it, so a crash heals within a sweep).

const MAIN = fileURLToPath(new URL('./egress-resolver-main.ts', import.meta.url));

/** What the resolver's process is started with (its one argument, as JSON). */
export interface ResolverDaemonConfig {
  socket: string;
  nsenter: string;
  nft: string;
  upstreams: Upstream[];
  /** Where it says it is ready. */
  readyFd?: number;
  /** Its broker of credentials (egress-broker.ts), where the host has an egress authority. */
  broker?: BrokerSettings;
}

/** The broker's authority (egress-ca.ts's files), its openssl, and PADDOCK_EGRESS_UPSTREAM_CA's file. */
export interface BrokerSettings {
  ca: { cert: string; key: string; leafKey: string };
  openssl: string;
  upstreamCa?: string;
}

/** A sandbox the resolver serves: its held init (whose namespace is the sandbox's) and its files. */
export interface ServedSandbox {
  id: string;
  pid: number;
  startTime: string;
  policyFile: string;
  countFile: string;
}

export type ResolverRequest =
  /** With `credentials`, the sandbox's brokered credentials become those. */
  | { op: 'serve'; sandbox: ServedSandbox; credentials?: readonly BrokeredCredential[] }
  | { op: 'forget'; id: string } | { op: 'answered'; id: string } | { op: 'ping' };

export interface ResolverTarget {
  id: string;
  /** The sandbox's held init. */
  pid: number;
  nsenter: string;
  nft: string;
  files: EgressFiles;
  upstreams: readonly Upstream[];
  layout: Pick<Layout, 'resolver' | 'lockPrefix'>;
  deadline: number;
  broker?: BrokerSettings;
}

/**
 * The resolver serves the sandbox, started first if none runs; resolves once it answers there,
 * with whether it holds credentials the runtime sent (false when it began serving the sandbox
 * anew, having been started again, and none came since). With `credentials`, they become the
 * sandbox's brokered ones.
 */
export async function ensureResolver(target: ResolverTarget, credentials?: readonly BrokeredCredential[]): Promise<{ credentialsSent: boolean }> {
  const init = readStat(target.pid);
  if (!init) throw new Error('the sandbox ended before its resolver could serve it');
  const request: ResolverRequest = {
    op: 'serve',
    sandbox: { id: target.id, pid: target.pid, startTime: init.startTime, policyFile: target.files.policy, countFile: target.files.refused },
    ...(credentials ? { credentials } : {}),
  };
  let answer: Record<string, unknown>;
  try {
    answer = await ask(target.layout.resolver.socket, request, target.deadline);
  } catch (err) {
    if (!isAbsent(err)) throw err;
    await withLock(`${target.layout.lockPrefix}/egress-resolver`, target.deadline, async () => {
      // Another process may have started it while this one waited for the lock.
      const running = await ask(target.layout.resolver.socket, { op: 'ping' }, target.deadline).then(
        () => true,
        (failure: unknown) => (isAbsent(failure) ? false : Promise.reject(failure as Error)),
      );
      if (!running) await startResolver(target);
    });
    answer = await ask(target.layout.resolver.socket, request, target.deadline);
  }
  return { credentialsSent: answer.credentialsSent === true };
}

/** The resolver serves the sandbox no more (its policy names no domain now); nothing to do when none runs. */
export async function stopResolver(target: ResolverTarget): Promise<void> {
  await ask(target.layout.resolver.socket, { op: 'forget', id: target.id }, target.deadline).catch((err: unknown) => {
    if (!isAbsent(err)) throw err;
  });
}

/** The names the resolver answered the sandbox, with the addresses still open for them; none when none runs. */
export async function answeredNames(target: ResolverTarget): Promise<AnsweredName[]> {
  try {
    const answer = await ask(target.layout.resolver.socket, { op: 'answered', id: target.id }, target.deadline);
    return (answer.answered as AnsweredName[] | undefined) ?? [];
  } catch (err) {
    if (isAbsent(err)) return [];
    throw err;
  }
}

/** The policy the sandbox's filter has, as the last install or change wrote it; undefined before any. */
export async function readInstalled(files: EgressFiles): Promise<InstalledPolicy | undefined> {
  const text = await readFile(files.policy, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as InstalledPolicy);
}

export async function writeInstalled(files: EgressFiles, installed: InstalledPolicy): Promise<void> {
  const temporary = `${files.policy}.${process.pid}.${Date.now()}`;
  await writeFile(temporary, JSON.stringify(installed), { mode: 0o600 });
  await rename(temporary, files.policy);
}

/** The names the resolver refused the sandbox so far. */
export async function dnsRefusals(files: EgressFiles): Promise<number> {
  const text = await readFile(files.refused, 'utf8').catch(() => '0');
  const count = Number(text);
  return Number.isSafeInteger(count) && count >= 0 ? count : 0;
}

/** A new tag for a policy being installed: its named sets' names and its connections' mark. */
export function newTag(): number {
  return 1 + Math.floor(Math.random() * 0x7ffffffe);
}

/** Nothing listens on the control socket: no resolver runs. */
function isAbsent(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ECONNREFUSED';
}

/** One request on a connection of its own, and its answer. */
function ask(socket: string, request: ResolverRequest, deadline: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const connection = connect({ path: socket });
    let said = '';
    const timer = setTimeout(() => fail(new Error("the sandboxes' resolver did not answer in time")), Math.max(0, deadline - Date.now()));
    const fail = (err: Error) => {
      clearTimeout(timer);
      connection.destroy();
      reject(err);
    };
    connection.setEncoding('utf8');
    connection.on('error', fail);
    connection.on('data', (chunk: string) => {
      said += chunk;
      const end = said.indexOf('\n');
      if (end < 0) return;
      clearTimeout(timer);
      connection.end();
      const answer = JSON.parse(said.slice(0, end)) as { ok: boolean; error?: string } & Record<string, unknown>;
      if (answer.ok) resolve(answer);
      else reject(new Error(`the sandboxes' resolver could not serve the sandbox: ${answer.error}`));
    });
    connection.on('close', () => fail(new Error("the sandboxes' resolver closed the connection without an answer")));
    connection.write(`${JSON.stringify(request)}\n`);
  });
}

/** Starts the resolver, in a session of its own (it outlives its starter), and waits until it listens. */
async function startResolver(target: ResolverTarget): Promise<void> {
  const config: ResolverDaemonConfig = {
    socket: target.layout.resolver.socket,
    nsenter: target.nsenter,
    nft: target.nft,
    upstreams: [...target.upstreams],
    readyFd: 3,
    ...(target.broker ? { broker: target.broker } : {}),
  };
  const log = openSync(target.layout.resolver.log, 'a', 0o600);
  const child = (() => {
    try {
      return spawn(process.execPath, [MAIN, JSON.stringify(config)], { detached: true, cwd: '/', env: NETWORK_PROGRAM_ENV, stdio: ['ignore', log, log, 'pipe'] });
    } finally {
      closeSync(log);
    }
  })();
  await untilReady(child, { what: `the sandboxes' resolver (${target.layout.resolver.log})`, deadline: target.deadline });
}
