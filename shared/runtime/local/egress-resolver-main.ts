import { spawn } from 'node:child_process';
import type { Socket as UdpSocket } from 'node:dgram';
import { closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { EgressResolver } from './egress-resolver.ts';
import { queryBudget, serveDnsOverTcp, serveDnsOverUdp } from './dns-serve.ts';
import { BROKER, namedElement, PASS, RESOLVER, type InstalledPolicy, type OpenEntry } from './egress-filter.ts';
import { EgressBroker, upstreamResolver } from './egress-broker.ts';
import { servePassThrough, type SandboxesByAddress } from '../pass-through.ts';
import type { BrokeredCredential } from '../../network/brokered.ts';
import { isRunning } from './processes.ts';
import { NETWORK_PROGRAM_ENV, nftIn } from './nft.ts';
import type { ResolverDaemonConfig, ResolverRequest, ServedSandbox } from './egress-resolver-process.ts';

// The host's resolver for every local sandbox whose policy names domains (egress-resolver.ts does
// the answering): one process for all of them, as root, in the host's network namespace, started
// by the first runtime that needs it (egress-resolver-process.ts) and told of each sandbox over its
// control socket. A sandbox's own UDP socket and TCP listener are bound in its namespace by a
// helper run there (egress-sockets-main.ts); addresses are opened with nft run in that namespace.
// A sandbox is forgotten once its init has ended; with none left for IDLE_MS, the process exits.

const SOCKETS_MAIN = fileURLToPath(new URL('./egress-sockets-main.ts', import.meta.url));
const TCP_CONNECTIONS = 16;
const ALIVE_CHECK_MS = 2000;
const HELPER_TIMEOUT_MS = 10_000;
const IDLE_MS = 60_000;
/** The refusals' count is written at most this often. */
const COUNT_WRITE_MS = 1000;
/** A request's line: a sandbox's brokered credentials ride on it (an account's secrets are at most a few MiB). */
const CONTROL_LINE_MAX = 4 * 1024 * 1024;

const config = JSON.parse(process.argv[2] ?? '{}') as ResolverDaemonConfig;
/** The sandboxes' brokered HTTPS (egress-broker.ts), where the host has an egress authority. */
const broker = config.broker
  ? new EgressBroker({
      ca: config.broker.ca,
      openssl: config.broker.openssl,
      upstreams: config.upstreams,
      upstreamCa: config.broker.upstreamCa === undefined ? undefined : readFileSync(config.broker.upstreamCa, 'utf8'),
    })
  : undefined;
/** The names the pass-through connects to, asked of the upstream servers. */
const passResolver = upstreamResolver(config.upstreams);

interface Served {
  sandbox: ServedSandbox;
  resolver: EgressResolver;
  netns: number;
  /** Its brokered credentials, as the runtime last sent them: in this process's memory alone. */
  credentials: readonly BrokeredCredential[];
  /** Whether the runtime sent them since this process began serving the sandbox (none sent is not the same as none). */
  sent: boolean;
  close(): void;
}

const served = new Map<string, Served>();
/** Serves under way, by sandbox: a second request for one waits for the first. */
const serving = new Map<string, Promise<void>>();
let idleSince = Date.now();

async function main(): Promise<void> {
  // Only root reaches the control socket: it is made with no permission for anyone else. A path
  // left by a resolver that was killed is taken over (its starter held the start's lock).
  process.umask(0o077);
  await rm(config.socket, { force: true });
  const control = createServer((socket) => answerControl(socket));
  await new Promise<void>((resolve, reject) => {
    control.once('error', reject);
    control.listen(config.socket, resolve);
  });
  control.on('error', () => undefined);
  if (config.readyFd !== undefined) {
    writeSync(config.readyFd, 'ready\n');
    closeSync(config.readyFd);
  }
  setInterval(() => {
    for (const [id, entry] of served) {
      if (!isRunning(entry.sandbox.pid, entry.sandbox.startTime)) forget(id);
    }
    if (served.size > 0 || serving.size > 0) idleSince = Date.now();
    // Its socket's path goes with the close (libuv unlinks it), before any other process can
    // find it gone and start another resolver on the same path.
    else if (Date.now() - idleSince > IDLE_MS) control.close(() => process.exit(0));
  }, ALIVE_CHECK_MS);
}

/** One request a line, one answer a line: `{"ok":true}` or `{"ok":false,"error":…}`. */
function answerControl(socket: Socket): void {
  let held = '';
  socket.on('error', () => undefined);
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    held += chunk;
    if (held.length > CONTROL_LINE_MAX) return void socket.destroy();
    for (let at = held.indexOf('\n'); at >= 0; at = held.indexOf('\n')) {
      const line = held.slice(0, at);
      held = held.slice(at + 1);
      void handle(line).then(
        (more) => socket.write(`${JSON.stringify({ ok: true, ...(more ?? {}) })}\n`),
        (err: unknown) => socket.write(`${JSON.stringify({ ok: false, error: (err as Error).message })}\n`),
      );
    }
  });
}

/** What a request answers besides `ok`. */
async function handle(line: string): Promise<object | void> {
  const request = JSON.parse(line) as ResolverRequest;
  if (request.op === 'ping') return;
  if (request.op === 'answered') return { answered: served.get(request.id)?.resolver.answeredNames() ?? [] };
  if (request.op === 'forget') return forget(request.id);
  if (request.op !== 'serve') throw new Error(`no such request: ${String((request as { op?: unknown }).op)}`);
  const { sandbox } = request;
  const current = served.get(sandbox.id);
  if (!current || current.sandbox.pid !== sandbox.pid || current.sandbox.startTime !== sandbox.startTime) {
    let pending = serving.get(sandbox.id);
    if (!pending) {
      pending = serve(sandbox).finally(() => serving.delete(sandbox.id));
      serving.set(sandbox.id, pending);
    }
    await pending;
  }
  const entry = served.get(sandbox.id);
  if (request.credentials && entry) {
    entry.credentials = request.credentials;
    entry.sent = true;
  }
  return { credentialsSent: entry?.sent ?? false };
}

function forget(id: string): void {
  served.get(id)?.close();
  served.delete(id);
}

/** Binds the sandbox's sockets in its namespace and answers its queries from then on. */
async function serve(sandbox: ServedSandbox): Promise<void> {
  forget(sandbox.id);
  // The namespace is held by a descriptor from the start: nothing else can take the pid's place.
  const netns = openSync(`/proc/${sandbox.pid}/ns/net`, 'r');
  try {
    if (!isRunning(sandbox.pid, sandbox.startTime)) throw new Error(`sandbox ${sandbox.id} is not running`);
    const { udp, tcp, passes, https } = await socketsIn(netns);
    // One reader of the installed policy (and one copy of it kept) for the resolver, the pass-through and the broker.
    const installed = policyReader(sandbox.policyFile);
    const refused = refusalCounter(sandbox);
    const resolver = resolverFor(netns, installed, refused);
    const admit = queryBudget();
    serveDnsOverUdp(udp, (query) => (admit() ? resolver.answer(query, 'udp') : Promise.resolve(undefined)));
    tcp.maxConnections = TCP_CONNECTIONS;
    tcp.on('connection', (socket: Socket) => serveDnsOverTcp(socket, (query) => resolver.answer(query, 'tcp'), admit));
    tcp.on('error', () => undefined);
    const entry: Served = {
      sandbox,
      resolver,
      netns,
      credentials: [],
      sent: false,
      close: () => {
        udp.close();
        tcp.close();
        for (const close of closePasses) close();
        closeBroker?.();
        closeSync(netns);
      },
    };
    // Every connection the pass-through takes is this sandbox's: its listeners are in its namespace alone.
    const passing: SandboxesByAddress = {
      byAddress: async () => {
        const now = await installed();
        return now && { id: sandbox.id, installed: now, credentials: entry.credentials };
      },
    };
    const closePasses = [...passes].map(([port, server]) => servePassThrough(server, port, { sandboxes: passing, resolver: passResolver, refused }));
    const closeBroker = https && broker?.serve(https, { credentials: () => entry.credentials, installed });
    served.set(sandbox.id, entry);
  } catch (err) {
    closeSync(netns);
    throw err;
  }
}

function resolverFor(netns: number, installed: () => Promise<InstalledPolicy | undefined>, refused: () => void): EgressResolver {
  return new EgressResolver({ installed, upstreams: config.upstreams, open: opener(netns), refused });
}

/** Counts what the sandbox's resolver and pass-through refused, into its count file (read by the runtime's sweep) at most every COUNT_WRITE_MS. */
function refusalCounter(sandbox: ServedSandbox): () => void {
  let refused = 0;
  let countWritten = 0;
  let countTimer: NodeJS.Timeout | undefined;
  const writeCount = () => {
    countTimer = undefined;
    countWritten = refused;
    const temporary = `${sandbox.countFile}.${process.pid}`;
    void writeFile(temporary, String(refused), { mode: 0o600 })
      .then(() => rename(temporary, sandbox.countFile))
      .catch(() => undefined);
  };
  return () => {
    refused++;
    if (refused !== countWritten) countTimer ??= setTimeout(writeCount, COUNT_WRITE_MS);
  };
}

/**
 * Opens entries in the sandbox's sets: one nft at a time for the sandbox, each run taking every
 * entry asked for meanwhile (of the same policy: a transaction on a replaced policy's sets fails
 * whole), so a sandbox asking many names costs a few nft runs, not one a name.
 */
function opener(netns: number): (tag: number, entries: OpenEntry[]) => Promise<void> {
  const waiting: { tag: number; entries: OpenEntry[]; done: (err?: unknown) => void }[] = [];
  let running = false;
  const drain = async () => {
    if (running) return;
    running = true;
    try {
      while (waiting.length > 0) {
        const tag = waiting[0]!.tag;
        const batch = waiting.filter((item) => item.tag === tag);
        waiting.splice(0, waiting.length, ...waiting.filter((item) => item.tag !== tag));
        const failure = await nftScript(netns, openScript(tag, batch.flatMap((item) => item.entries))).then(
          () => undefined,
          (err: unknown) => err ?? new Error('nft failed'),
        );
        for (const item of batch) item.done(failure);
      }
    } finally {
      running = false;
    }
  };
  return (tag, entries) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ tag, entries, done: (err) => (err ? reject(err as Error) : resolve()) });
      void drain();
    });
}

/** The UDP socket and TCP listener, the pass-through's listeners, and the broker's listener where there is a broker, bound in the sandbox's namespace by the helper run there. */
async function socketsIn(netns: number): Promise<{ udp: UdpSocket; tcp: Server; passes: Map<80 | 443, Server>; https?: Server }> {
  const brokerAt = broker ? [BROKER.address, String(BROKER.port)] : [];
  const helper = spawn(config.nsenter, ['--net=/proc/self/fd/3', '--', process.execPath, SOCKETS_MAIN, RESOLVER.address, String(RESOLVER.port), PASS.address, PASS.ports.join(','), ...brokerAt], {
    cwd: '/',
    env: NETWORK_PROGRAM_ENV,
    stdio: ['ignore', 'ignore', 'inherit', netns, 'ipc'],
  });
  let udp: UdpSocket | undefined;
  let tcp: Server | undefined;
  let https: Server | undefined;
  const passes = new Map<80 | 443, Server>();
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the sockets in the sandbox were not made in time')), HELPER_TIMEOUT_MS);
      helper.on('message', (message: { kind?: string }, handle: unknown) => {
        if (message.kind === 'udp') udp = handle as UdpSocket;
        if (message.kind === 'tcp') tcp = handle as Server;
        if (message.kind === 'https') https = handle as Server;
        for (const port of PASS.ports) if (message.kind === `pass${port}`) passes.set(port, handle as Server);
        if (udp && tcp && passes.size === PASS.ports.length && (https || !broker)) {
          clearTimeout(timer);
          resolve();
        }
      });
      helper.on('error', reject);
      // Its messages come before its exit; an exit without all of them is its failure.
      helper.on('exit', () => setTimeout(() => reject(new Error('the sockets in the sandbox could not be made')), 100));
    });
  } catch (err) {
    helper.kill('SIGKILL');
    udp?.close();
    tcp?.close();
    https?.close();
    for (const server of passes.values()) server.close();
    throw err;
  }
  return { udp: udp!, tcp: tcp!, passes, ...(https ? { https } : {}) };
}

/** The installed policy as the runtime wrote it, read again only when the file changed. */
function policyReader(file: string): () => Promise<InstalledPolicy | undefined> {
  let known: { ino: number; mtimeMs: number; size: number; installed: InstalledPolicy | undefined } | undefined;
  return async () => {
    try {
      // Asked at every query, so that a change is heard by the next: a local file's stat, at once.
      const info = statSync(file);
      if (known && known.ino === info.ino && known.mtimeMs === info.mtimeMs && known.size === info.size) return known.installed;
      const installed = JSON.parse(await readFile(file, 'utf8')) as InstalledPolicy;
      known = { ino: info.ino, mtimeMs: info.mtimeMs, size: info.size, installed };
      return installed;
    } catch {
      return undefined;
    }
  };
}

/**
 * Entries added to the tagged policy's sets, each with its full time to come: an element added
 * again keeps the timeout it had, so each is added (if new), deleted and added in one transaction.
 */
function openScript(tag: number, entries: OpenEntry[]): string {
  return entries
    .flatMap((entry) => {
      const { set, element } = namedElement(tag, entry);
      return [`add element ${set} { ${element} timeout ${entry.seconds}s }`, `delete element ${set} { ${element} }`, `add element ${set} { ${element} timeout ${entry.seconds}s }`];
    })
    .join('\n');
}

/** nft -f run in the sandbox's namespace; rejects when it fails (the tagged sets gone with their policy). */
async function nftScript(netns: number, script: string): Promise<void> {
  const ran = await nftIn(config, netns, ['-f', '-'], `${script}\n`);
  if (ran.code !== 0) throw new Error(`nft exited with ${ran.code}: ${ran.said.trim()}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`the sandboxes' resolver could not start: ${(err as Error).message}\n`);
  process.exit(1);
});
