import { spawn } from 'node:child_process';
import type { Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { closeSync, openSync, statSync, writeSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import type { Server, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { EgressResolver, type OpenEntry } from './egress-resolver.ts';
import { EGRESS_TABLE, namedSets, RESOLVER, type InstalledPolicy } from './egress-filter.ts';
import { isRunning } from './processes.ts';
import type { ResolverProcessConfig } from './egress-resolver-process.ts';

// The process of one sandbox's resolver (egress-resolver.ts), started by the runtime
// (egress-resolver-process.ts) as root, in the host's network namespace, with the sandbox's
// marker as its first argument so that the sandbox's teardown ends it. Its sockets are bound in
// the sandbox's namespace by a helper run there (egress-sockets-main.ts); it opens addresses with
// nft run in that namespace, and ends by itself once the sandbox's init has.

const SOCKETS_MAIN = fileURLToPath(new URL('./egress-sockets-main.ts', import.meta.url));
const ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' };
/** The largest message taken over UDP (EDNS's usual size), and over TCP (its framing's). */
const UDP_MAX = 4096;
const TCP_MAX = 65_535;
const TCP_CONNECTIONS = 16;
const TCP_IDLE_MS = 10_000;
const ALIVE_CHECK_MS = 2000;
const HELPER_TIMEOUT_MS = 10_000;
/** The refusals' count is written at most this often. */
const COUNT_WRITE_MS = 1000;

const config = JSON.parse(process.argv[2] ?? '{}') as ResolverProcessConfig;

async function main(): Promise<void> {
  // The namespace is held by a descriptor from the start: nothing else can take the pid's place.
  const netns = openSync(`/proc/${config.pid}/ns/net`, 'r');
  if (!isRunning(config.pid, config.startTime)) process.exit(0);
  const { udp, tcp } = await socketsInSandbox(netns);

  let refused = 0;
  let countWritten = 0;
  let countTimer: NodeJS.Timeout | undefined;
  const writeCount = () => {
    countTimer = undefined;
    countWritten = refused;
    const temporary = `${config.countFile}.${process.pid}`;
    void writeFile(temporary, String(refused), { mode: 0o600 })
      .then(() => rename(temporary, config.countFile))
      .catch(() => undefined);
  };

  let nftQueue = Promise.resolve();
  const resolver = new EgressResolver({
    installed: policyReader(config.policyFile),
    upstreams: config.upstreams,
    // One nft at a time: each is a transaction of its own.
    open: (tag, entries) => {
      const run = nftQueue.then(() => nftIn(netns, openScript(tag, entries)));
      nftQueue = run.catch(() => undefined);
      return run;
    },
    refused: () => {
      refused++;
      if (refused !== countWritten) countTimer ??= setTimeout(writeCount, COUNT_WRITE_MS);
    },
  });

  udp.on('message', (message, from) => {
    if (message.byteLength > UDP_MAX) return;
    void resolver.answer(message, 'udp').then((answer) => {
      if (answer) udp.send(answer, from.port, from.address);
    });
  });
  udp.on('error', () => undefined);
  tcp.maxConnections = TCP_CONNECTIONS;
  tcp.on('connection', (socket: Socket) => serveTcp(socket, resolver));
  tcp.on('error', () => undefined);

  if (config.readyFd !== undefined) {
    writeSync(config.readyFd, 'ready\n');
    closeSync(config.readyFd);
  }
  setInterval(() => {
    if (!isRunning(config.pid, config.startTime)) process.exit(0);
  }, ALIVE_CHECK_MS);
}

/** The UDP socket and TCP listener, bound in the sandbox's namespace by the helper run there. */
async function socketsInSandbox(netns: number): Promise<{ udp: UdpSocket; tcp: Server }> {
  const helper = spawn(config.nsenter, ['--net=/proc/self/fd/3', '--', process.execPath, SOCKETS_MAIN, RESOLVER.address, String(RESOLVER.port)], {
    cwd: '/',
    env: ENV,
    stdio: ['ignore', 'ignore', 'inherit', netns, 'ipc'],
  });
  let udp: UdpSocket | undefined;
  let tcp: Server | undefined;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the sockets in the sandbox were not made in time')), HELPER_TIMEOUT_MS);
    helper.on('message', (message: { kind?: string }, handle: unknown) => {
      if (message.kind === 'udp') udp = handle as UdpSocket;
      if (message.kind === 'tcp') tcp = handle as Server;
      if (udp && tcp) {
        clearTimeout(timer);
        resolve();
      }
    });
    helper.on('error', reject);
    // Its messages come before its exit; an exit without both is its failure.
    helper.on('exit', () => setTimeout(() => reject(new Error('the sockets in the sandbox could not be made')), 100));
  });
  return { udp: udp!, tcp: tcp! };
}

/** Length-framed queries, one after another; the connection ends when idle, malformed or too long. */
function serveTcp(socket: Socket, resolver: EgressResolver): void {
  socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
  socket.on('error', () => undefined);
  let held = Buffer.alloc(0);
  let busy = false;
  const next = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    try {
      while (held.byteLength >= 2) {
        const length = held.readUInt16BE(0);
        if (held.byteLength < 2 + length) break;
        const query = held.subarray(2, 2 + length);
        held = held.subarray(2 + length);
        const answer = await resolver.answer(query, 'tcp');
        if (!answer || answer.byteLength > TCP_MAX) return void socket.destroy();
        const framed = Buffer.alloc(2 + answer.byteLength);
        framed.writeUInt16BE(answer.byteLength);
        answer.copy(framed, 2);
        socket.write(framed);
      }
    } finally {
      busy = false;
    }
  };
  socket.on('data', (chunk: Buffer) => {
    if (held.byteLength + chunk.byteLength > TCP_MAX + 2) return void socket.destroy();
    held = Buffer.concat([held, chunk]);
    void next();
  });
  socket.resume();
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
  const sets = namedSets(tag);
  return entries
    .flatMap((entry) => {
      const set = entry.family === 4 ? (entry.port === undefined ? sets.v4 : sets.v4port) : entry.port === undefined ? sets.v6 : sets.v6port;
      const element = entry.port === undefined ? entry.address : `${entry.address} . ${entry.port}`;
      const target = `inet ${EGRESS_TABLE} ${set}`;
      return [`add element ${target} { ${element} timeout ${entry.seconds}s }`, `delete element ${target} { ${element} }`, `add element ${target} { ${element} timeout ${entry.seconds}s }`];
    })
    .join('\n');
}

/** nft -f run in the sandbox's namespace; rejects when it fails (the tagged sets gone with their policy). */
async function nftIn(netns: number, script: string): Promise<void> {
  const nft = spawn(config.nsenter, ['--net=/proc/self/fd/3', '--', config.nft, '-f', '-'], { cwd: '/', env: ENV, stdio: ['pipe', 'ignore', 'ignore', netns] });
  nft.stdin!.on('error', () => undefined);
  nft.stdin!.end(`${script}\n`);
  const [code] = (await Promise.race([once(nft, 'close'), once(nft, 'error').then(([err]) => Promise.reject(err as Error))])) as [number | null];
  if (code !== 0) throw new Error(`nft exited with ${code}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`the sandbox's resolver could not start: ${(err as Error).message}\n`);
  process.exit(1);
});
