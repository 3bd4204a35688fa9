import type { Resolver } from 'node:dns/promises';
import { connect, Server, type Socket } from 'node:net';
import { hostsCover, policyReaches, type BrokeredCredential } from '../network/brokered.ts';
import { reachesName } from '../network/rules.ts';
import { reachableAddresses, type EgressBroker } from './local/egress-broker.ts';
import { readFirstBytes } from './first-bytes.ts';
import { ReadBuffers } from '../read-buffers.ts';
import type { InstalledPolicy } from './local/egress-filter.ts';

// The egress's pass-through, for a sandbox's HTTP and HTTPS to a name: on Kubernetes the egress
// gateway's (kubernetes/gateway/), where a pod's DNS answered the name with the gateway's address;
// on the local runtime the host's resolver's, in the sandbox's namespace, where its filter sends
// connections to an address opened for a name (local/egress-filter.ts's PASS). The name is the
// ClientHello's server name on 443 and the request's Host on 80; the sandbox's policy must allow
// that name on that port now, the egress resolves it itself and connects only to an address
// outside the floor (so a name and the address it leaves for always agree, and a name that
// resolves inward reaches nothing), then passes the bytes through unread. A brokered host's TLS
// goes to the broker instead, which adds the credential. A refusal is at once: a TLS connection
// closed, a request answered 403. Open connections are checked again as policies change, and cut
// when theirs no longer allows them.

const FIRST_BYTES_TIMEOUT_MS = 10_000;
const CONNECT_TIMEOUT_MS = 10_000;

/** A connection with nothing moving either way for this long is closed. */
const IDLE_MS = 120_000;
/** One sandbox's connections through the gateway at once. */
const CONNECTIONS_PER_SANDBOX = 256;
/** How often open connections are held against their sandbox's policy. */
const RECHECK_MS = 1000;
/** A name's reachable addresses are kept this long (every sandbox's connections ask the same few names); past NAMES_KEPT the memory starts again. */
const NAME_KEPT_MS = 10_000;
const NAMES_KEPT = 4096;

/** A sandbox as the pass-through reads it, at each connection and again while it is open. */
export interface PassingSandbox {
  id: string;
  /** The policy in force, with the brokered hosts; its tag changes with either. */
  installed: InstalledPolicy;
  /** The brokered credentials' values: in the egress's memory alone. */
  credentials: readonly BrokeredCredential[];
}

export interface SandboxesByAddress {
  /** The running sandbox a connection from this address is from; undefined for none. */
  byAddress(address: string): Promise<PassingSandbox | undefined>;
}

export interface ProxyDeps {
  sandboxes: SandboxesByAddress;
  resolver: Resolver;
  /** Brokered credentials' TLS; undefined where the gateway has no certificate authority. */
  broker?: EgressBroker;
  /** A connection the sandbox's policy (or the floor) refused. */
  refused(sandboxId: string): void;
}

interface Passing {
  source: string;
  sandboxId: string;
  name: string;
  port: number;
  close(): void;
}

/** Serves `server`'s connections as the gateway's port `port` (80: HTTP, 443: TLS); the returned close ends them all. */
export function servePassThrough(server: Server, port: 80 | 443, deps: ProxyDeps): () => void {
  const kind = port === 443 ? 'tls' : 'http';
  const open = new Set<Passing>();
  const counts = new Map<string, number>();
  const brokers = new Map<string, { source: string; latest: PassingSandbox; listener: Server; close: () => void }>();
  const names = new Map<string, { until: number; found: ReturnType<typeof reachableAddresses> }>();
  const buffers = new ReadBuffers({ bytes: READ_BYTES, kept: BUFFERS_KEPT });
  // A pod that half-closes once its request is sent still reads the whole answer: its end goes on
  // to the host (the pipe below), and its connection closes once the host's end has reached it.
  // Set here rather than at creation: the local runtime's listeners are made in another process and
  // handed over (local/egress-sockets-main.ts); a server reads it at each connection.
  (server as Server & { allowHalfOpen: boolean }).allowHalfOpen = true;

  /** The name's addresses outside the floor, as resolved at most NAME_KEPT_MS ago (a failure is not kept). */
  function addressesOf(name: string): ReturnType<typeof reachableAddresses> {
    const now = Date.now();
    const kept = names.get(name);
    if (kept && kept.until > now) return kept.found;
    if (names.size >= NAMES_KEPT) names.clear();
    const found = reachableAddresses(deps.resolver, name);
    names.set(name, { until: now + NAME_KEPT_MS, found });
    void found.then((addresses) => {
      if (addresses instanceof Error && names.get(name)?.found === found) names.delete(name);
    });
    return found;
  }

  server.on('connection', (socket: Socket) => {
    // Each write goes out at once: a handshake's small messages are not held for the last one's acknowledgement.
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    socket.setTimeout(IDLE_MS, () => socket.destroy());
    void take(socket).catch(() => socket.destroy());
  });
  server.on('error', () => undefined);

  async function take(socket: Socket): Promise<void> {
    const source = plainAddress(socket.remoteAddress);
    const sandbox = source === undefined ? undefined : await deps.sandboxes.byAddress(source);
    if (!sandbox || source === undefined) return void socket.destroy();
    const count = counts.get(sandbox.id) ?? 0;
    if (count >= CONNECTIONS_PER_SANDBOX) return void socket.destroy();
    counts.set(sandbox.id, count + 1);
    socket.once('close', () => {
      const left = (counts.get(sandbox.id) ?? 1) - 1;
      if (left > 0) counts.set(sandbox.id, left);
      else counts.delete(sandbox.id);
    });
    const first = await readFirstBytes(socket, kind, FIRST_BYTES_TIMEOUT_MS);
    if (!first?.name || (first.port !== undefined && first.port !== port)) return refuse(socket, kind, 400, 'Paddock\'s egress needs the name this connection is for.');
    const { name, head } = first;
    // The latest word on the sandbox, read again after the wait for its first bytes.
    const now = await deps.sandboxes.byAddress(source);
    if (!now || now.id !== sandbox.id) return void socket.destroy();
    if (kind === 'tls' && deps.broker && hostsCover(now.installed.brokered ?? [], name) && policyReaches(now.installed.policy, name)) {
      // Put back for TLS to read first: a TLS socket made over a socket takes what it holds read.
      socket.unshift(head);
      return void brokerFor(source, now).listener.emit('connection', socket);
    }
    if (!reachesName(now.installed.policy, name, port)) {
      deps.refused(sandbox.id);
      return refuse(socket, kind, 403, `This sandbox's egress policy does not allow ${name} on port ${port}.`);
    }
    const addresses = await addressesOf(name);
    if (addresses instanceof Error) {
      if (addresses.code === 'EREFUSED') deps.refused(sandbox.id);
      return refuse(socket, kind, 502, `Paddock's egress cannot reach ${name}: ${addresses.message}.`);
    }
    // The host's bytes to the pod, read in large pieces: a download is most of what passes, and
    // each read is a callback of this process's (returning false holds the host until the pod drains).
    let upstream: Socket | undefined;
    const toPod = (chunk: Buffer): boolean => {
      socket.write(chunk, () => buffers.release(chunk));
      if (socket.writableLength < WRITE_AHEAD_BYTES) return true;
      socket.once('drain', () => upstream?.resume());
      return false;
    };
    upstream = await connected(addresses[0]!.address, port, buffers, toPod);
    if (!upstream) return refuse(socket, kind, 502, `Paddock's egress could not connect to ${name}.`);
    if (socket.destroyed) return void upstream.destroy();
    const passing: Passing = {
      source,
      sandboxId: sandbox.id,
      name,
      port,
      close: () => {
        socket.destroy();
        upstream.destroy();
      },
    };
    open.add(passing);
    upstream.setTimeout(IDLE_MS, () => passing.close());
    upstream.on('error', () => passing.close());
    socket.on('close', () => {
      open.delete(passing);
      upstream?.destroy();
    });
    upstream.on('end', () => socket.end());
    // After the host's end, what waits to be written to the pod still goes (end() flushes it);
    // a host gone without one takes the pod's connection with it.
    upstream.on('close', () => {
      if (!socket.writableEnded) socket.destroy();
    });
    upstream.write(head);
    socket.pipe(upstream);
    socket.resume();
  }

  /** The broker's serving of one sandbox, kept while it has connections; its credentials as last read. */
  function brokerFor(source: string, sandbox: PassingSandbox): { listener: Server } {
    const kept = brokers.get(sandbox.id);
    if (kept && kept.source === source) {
      kept.latest = sandbox;
      return kept;
    }
    kept?.close();
    // Never listening: the gateway hands it the connections that are the broker's.
    const listener = new Server();
    const entry = {
      source,
      latest: sandbox,
      listener,
      close: () => undefined as void,
    };
    entry.close = deps.broker!.serve(listener, {
      credentials: () => entry.latest.credentials,
      installed: async () => {
        const now = await deps.sandboxes.byAddress(source);
        if (!now || now.id !== sandbox.id) return undefined;
        entry.latest = now;
        return now.installed;
      },
    });
    brokers.set(sandbox.id, entry);
    return entry;
  }

  // Policies change under open connections: each is held against its sandbox's, as read now.
  const recheck = setInterval(() => {
    for (const passing of open) {
      void deps.sandboxes.byAddress(passing.source).then((now) => {
        if (!now || now.id !== passing.sandboxId || !reachesName(now.installed.policy, passing.name, passing.port)) passing.close();
      });
    }
    for (const [id, entry] of brokers) {
      void deps.sandboxes.byAddress(entry.source).then((now) => {
        if (!now || now.id !== id) {
          entry.close();
          brokers.delete(id);
        }
      });
    }
  }, RECHECK_MS);
  recheck.unref();

  return () => {
    clearInterval(recheck);
    server.close();
    for (const passing of open) passing.close();
    for (const entry of brokers.values()) entry.close();
    brokers.clear();
  };
}

/** Bytes a read of the host's may bring at once. */
const READ_BYTES = 256 * 1024;
/** A read at least this large goes to the pod in its own buffer; a smaller one is copied out. */
const HANDED_ON_BYTES = READ_BYTES / 4;
/** Read buffers a listener keeps for later reads (4 MiB). */
const BUFFERS_KEPT = 16;
/**
 * What may wait to be written to the pod before the host's reads pause. A socket's own mark
 * (16 KiB) is below one read: holding to it would stop and start the reads at every chunk.
 */
const WRITE_AHEAD_BYTES = 1024 * 1024;

/** A TCP connection to the address, its bytes handed to `take` (copies: false holds the reads until resume()); undefined when none was made in time. */
function connected(address: string, port: number, buffers: ReadBuffers, take: (chunk: Buffer) => boolean): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    // A read that fills a good part of its buffer is handed on as it is, and the next read gets
    // another buffer; a smaller one is copied out and its buffer read into again. A download's
    // large reads cost no copy, and a chunk held for the pod never ties up more than 4 times its
    // size. A buffer handed on serves reads again once its write to the pod is done (toPod).
    let reading: Buffer | undefined;
    const next = () => (reading ??= buffers.next());
    const callback = (n: number, read: Uint8Array): boolean => {
      if (n < HANDED_ON_BYTES) return take(Buffer.from(read.subarray(0, n)));
      reading = undefined;
      return take(Buffer.from(read.buffer, read.byteOffset, n));
    };
    const socket = connect({ host: address, port, noDelay: true, onread: { buffer: next, callback } });
    // The buffer it would have read into next serves another connection's reads.
    socket.once('close', () => {
      if (reading) buffers.release(reading);
      reading = undefined;
    });
    const timer = setTimeout(() => fail(), CONNECT_TIMEOUT_MS);
    const fail = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(undefined);
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      resolve(socket);
    });
  });
}

/** An IPv4 address as a pod has it (a dual-stack socket's mapped form unwrapped). */
export function plainAddress(address: string | undefined): string | undefined {
  if (!address) return undefined;
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

function refuse(socket: Socket, kind: 'tls' | 'http', status: number, text: string): void {
  if (kind === 'tls') return void socket.destroy();
  const reason = status === 403 ? 'Forbidden' : status === 400 ? 'Bad Request' : 'Bad Gateway';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(text) + 1}\r\n\r\n${text}\n`);
}
