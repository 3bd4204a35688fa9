import { Resolver } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { isIP, type LookupFunction, type Server, type Socket } from 'node:net';
import { createSecureContext, createServer as createTlsServer, rootCertificates, type SecureContext, type TLSSocket } from 'node:tls';
import { headersFor, hostsCover, policyReaches, type BrokeredCredential } from '../../network/brokered.ts';
import { addressInFloor } from '../../network/floor.ts';
import type { Upstream } from '../../network/resolvers.ts';
import { openssl, SYSTEM_BUNDLE } from './egress-ca.ts';
import { DOMAIN_NAME } from '../first-bytes.ts';
import { tokenBucket } from './budget.ts';
import { hostAddresses, type InstalledPolicy } from './egress-filter.ts';

// The egress's broker for one host (run by egress-resolver-main.ts): where a sandbox's HTTPS to a
// brokered host ends (its resolver answered the name with egress-filter.ts's BROKER). The TLS is
// ended with a certificate for that name signed by the host's egress authority (egress-ca.ts),
// only for a name the sandbox's credentials and policy cover; each request's Host must be that
// name; the credentials' headers replace any of the same name the program sent; the request goes
// on over a TLS connection of the broker's own to that name, port 443, checked against the host's
// authorities (and PADDOCK_EGRESS_UPSTREAM_CA), at an address outside the floor. The values live
// in this process's memory alone, and no answer of the broker's own names one.

const LEAF_DAYS = 30;
/** Names a sandbox may have a certificate made for (a wildcard host covers any number): a burst, then so many a minute. */
const NEW_NAMES_BURST = 20;
const NEW_NAMES_PER_MINUTE = 20;
/** Certificates kept, by name; past it the memory starts again. */
const LEAVES_KEPT = 256;
/** A sandbox's connections to the broker at once, and upstream. */
const CONNECTIONS_PER_SANDBOX = 64;
const HANDSHAKE_TIMEOUT_MS = 10_000;
const HEADERS_TIMEOUT_MS = 30_000;
/** A connection with nothing moving either way for this long is closed. */
const IDLE_MS = 120_000;
const KEEP_ALIVE_MS = 5_000;
/** Hop-by-hop headers (RFC 9110, 7.6.1), never passed on either way. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authorization', 'proxy-authenticate']);

export interface BrokerOptions {
  /** The authority's certificate and key, and the key of the certificates it signs (PEM files). */
  ca: { cert: string; key: string; leafKey: string };
  openssl: string;
  upstreams: readonly Upstream[];
  /** Authorities trusted upstream besides the host's own (PEM), for brokered hosts with a private one. */
  upstreamCa?: string;
}

/** What the broker reads of one sandbox, at each connection and request: both change while it runs. */
export interface BrokeredSandbox {
  credentials(): readonly BrokeredCredential[];
  installed(): Promise<InstalledPolicy | undefined>;
}

export class EgressBroker {
  readonly #options: BrokerOptions;
  readonly #leafKey: string;
  readonly #leaves = new Map<string, Promise<SecureContext>>();
  readonly #resolver: Resolver;
  /** The authorities trusted upstream, made into a context once. */
  readonly #upstreamTrust: SecureContext;

  constructor(options: BrokerOptions) {
    this.#options = options;
    // One key for every name's certificate: the names differ, the key never leaves the host's side.
    this.#leafKey = readFileSync(options.ca.leafKey, 'utf8');
    this.#resolver = upstreamResolver(options.upstreams);
    // The host's own authorities, as the sandbox's programs would have checked them, else Node's.
    const system = (() => {
      try {
        return [readFileSync(SYSTEM_BUNDLE, 'utf8')];
      } catch {
        return [...rootCertificates];
      }
    })();
    this.#upstreamTrust = createSecureContext({ ca: [...system, ...(options.upstreamCa ? [options.upstreamCa] : [])] });
  }

  /**
   * Serves the sandbox's connections from `listener` (bound in its namespace, paused on connect);
   * the returned close ends them all, the sandbox's upstream connections too.
   */
  serve(listener: Server, sandbox: BrokeredSandbox): () => void {
    // A context, not `ca`: the agent names its pools by their options, and a `ca` of the host's
    // whole bundle would be copied into that name at every request (a quarter of the egress's time).
    const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS_PER_SANDBOX, maxTotalSockets: CONNECTIONS_PER_SANDBOX, secureContext: this.#upstreamTrust, timeout: IDLE_MS });
    const newName = tokenBucket(NEW_NAMES_BURST, NEW_NAMES_PER_MINUTE / 60);
    const http = createHttpServer({ headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: 0, keepAliveTimeout: KEEP_ALIVE_MS }, (req, res) => {
      // A request the upstream's client refuses to send (a path or header Node will not write)
      // is the sandbox's mistake: answered, never a crash of the process every sandbox shares.
      this.#forward(sandbox, agent, req, res).catch(() => {
        if (!res.headersSent) answer(res, 400, 'Paddock\'s egress cannot send this request on.');
        else res.destroy();
      });
    });
    http.timeout = IDLE_MS;
    // A WebSocket or any other protocol switch, and CONNECT: not brokered.
    const refuse = (_req: IncomingMessage, socket: Socket) => {
      socket.end('HTTP/1.1 501 Not Implemented\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    };
    http.on('upgrade', refuse);
    http.on('connect', refuse);
    http.on('clientError', (_err, socket: Socket) => socket.destroy());
    const tls = createTlsServer({
      ALPNProtocols: ['http/1.1'],
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      SNICallback: (servername, done) => {
        const name = servername.toLowerCase().replace(/\.$/, '');
        void this.#admits(sandbox, name).then((admitted) => {
          if (!admitted) return done(new Error('not a brokered host of this sandbox'));
          // Each new name costs an openssl run: a sandbox asking for endless names under a wildcard pays with its own refusals.
          if (!this.#leaves.has(name) && !newName()) return done(new Error('too many new names'));
          this.#leaf(name).then(
            (context) => done(null, context),
            (err: unknown) => done(err as Error),
          );
        });
      },
    });
    tls.on('secureConnection', (socket: TLSSocket) => http.emit('connection', socket));
    tls.on('tlsClientError', (_err, socket) => socket.destroy());
    listener.maxConnections = CONNECTIONS_PER_SANDBOX;
    const open = new Set<Socket>();
    listener.on('connection', (socket: Socket) => {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined);
      socket.setTimeout(IDLE_MS, () => socket.destroy());
      // TLS reads the socket from here on, what it holds read already first: resumed, those
      // bytes would be emitted to no one.
      tls.emit('connection', socket);
    });
    listener.on('error', () => undefined);
    return () => {
      listener.close();
      for (const socket of open) socket.destroy();
      agent.destroy();
      http.close();
    };
  }

  /** Whether the name is one the sandbox's credentials cover and its policy lets it reach. */
  async #admits(sandbox: BrokeredSandbox, name: string): Promise<boolean> {
    if (!DOMAIN_NAME.test(name)) return false;
    const installed = await sandbox.installed();
    return installed !== undefined && sandbox.credentials().some((c) => hostsCover(c.hosts, name)) && policyReaches(installed.policy, name);
  }

  /** The name's certificate, signed by the authority: made once, kept. */
  #leaf(name: string): Promise<SecureContext> {
    const kept = this.#leaves.get(name);
    if (kept) return kept;
    if (this.#leaves.size >= LEAVES_KEPT) this.#leaves.clear();
    const { cert, key } = this.#options.ca;
    // The name passed DOMAIN_NAME: letters, digits, hyphens, underscores and dots, nothing openssl reads otherwise.
    const made = openssl(
      this.#options.openssl,
      ['req', '-new', '-x509', '-key', this.#options.ca.leafKey, '-CA', cert, '-CAkey', key, '-days', String(LEAF_DAYS), '-subj', `/CN=${name}`,
        '-addext', `subjectAltName=DNS:${name}`, '-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'extendedKeyUsage=serverAuth'],
    ).then((pem) => createSecureContext({ key: this.#leafKey, cert: pem }));
    made.catch(() => this.#leaves.delete(name));
    this.#leaves.set(name, made);
    return made;
  }

  async #forward(sandbox: BrokeredSandbox, agent: Agent, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const name = ((req.socket as TLSSocket).servername || '').toLowerCase().replace(/\.$/, '');
    const host = hostOf(req.headers.host);
    if (host !== name) return answer(res, 421, `This connection is for ${name}; a request for another host goes on a connection of its own.`);
    // Read again for each request: the policy or the credentials may have changed on a kept-alive connection.
    if (!(await this.#admits(sandbox, name))) return answer(res, 403, `${name} is not a brokered host this sandbox may reach now.`);
    const injected = headersFor(sandbox.credentials(), name);
    const headers: [string, string][] = [];
    const named = connectionNamed(req.headers.connection);
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const key = req.rawHeaders[i]!;
      const lower = key.toLowerCase();
      if (HOP_BY_HOP.has(lower) || named.has(lower) || injected.has(lower)) continue;
      headers.push([key, req.rawHeaders[i + 1]!]);
    }
    for (const { header, value } of injected.values()) headers.push([header, value]);
    const options: RequestOptions = {
      host: name,
      servername: name,
      port: 443,
      method: req.method,
      path: req.url,
      headers: headers.flat(),
      agent,
      lookup: this.#lookup,
      timeout: IDLE_MS,
    };
    const upstream = httpsRequest(options);
    upstream.on('timeout', () => upstream.destroy(new Error('the host went silent')));
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      req.unpipe(upstream);
      if (!res.headersSent) answer(res, 502, `Paddock's egress could not reach ${name}: ${err.code ?? err.message}.`);
      else res.destroy();
    });
    upstream.on('response', (answered) => {
      const back: string[] = [];
      const namedBack = connectionNamed(answered.headers.connection);
      for (let i = 0; i + 1 < answered.rawHeaders.length; i += 2) {
        const lower = answered.rawHeaders[i]!.toLowerCase();
        if (!HOP_BY_HOP.has(lower) && !namedBack.has(lower)) back.push(answered.rawHeaders[i]!, answered.rawHeaders[i + 1]!);
      }
      res.writeHead(answered.statusCode ?? 502, answered.statusMessage, back);
      answered.pipe(res);
      answered.on('error', () => res.destroy());
    });
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }

  /** The name's addresses from the upstream servers, without those of the floor or of this host. */
  readonly #lookup: LookupFunction = (hostname, options, callback) => {
    void reachableAddresses(this.#resolver, hostname).then((reachable) => {
      if (reachable instanceof Error) return callback(reachable, '', 4);
      if (options.all) return (callback as unknown as (err: null, all: { address: string; family: number }[]) => void)(null, reachable);
      callback(null, reachable[0]!.address, reachable[0]!.family);
    });
  };
}

/** A resolver asking the upstream servers (PADDOCK_EGRESS_RESOLVERS) alone. */
export function upstreamResolver(upstreams: readonly Upstream[]): Resolver {
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  resolver.setServers(upstreams.map((u) => (isIP(u.address) === 6 ? `[${u.address}]:${u.port}` : `${u.address}:${u.port}`)));
  return resolver;
}

/**
 * The name's addresses a sandbox's egress may connect to (none of the floor's or this host's own),
 * at least one; else an error whose code says why: EREFUSED (only such addresses) or ENOTFOUND.
 */
export async function reachableAddresses(resolver: Resolver, hostname: string): Promise<{ address: string; family: 4 | 6 }[] | NodeJS.ErrnoException> {
  const found = [
    ...(await resolver.resolve4(hostname).catch(() => [] as string[])).map((address) => ({ address, family: 4 as const })),
    ...(await resolver.resolve6(hostname).catch(() => [] as string[])).map((address) => ({ address, family: 6 as const })),
  ];
  const reachable = found.filter((a) => !refused(a.family, a.address));
  if (reachable.length > 0) return reachable;
  const err: NodeJS.ErrnoException = new Error(found.length ? `${hostname} resolves only to addresses no sandbox may reach` : `${hostname} has no address`);
  err.code = found.length ? 'EREFUSED' : 'ENOTFOUND';
  return err;
}

/** The floor, and this host's own addresses (a public one would reach its services). */
function refused(family: 4 | 6, address: string): boolean {
  if (addressInFloor(family, address)) return true;
  return hostAddresses().some((own) => own.replace(/%.*$/, '') === address);
}

/** The host a request names, lowercase, without port 443 or a final dot; undefined for any other port or none. */
function hostOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^([^:[\]]+)(?::(\d+))?$/.exec(header.trim().toLowerCase());
  if (!match || (match[2] !== undefined && match[2] !== '443')) return undefined;
  return match[1]!.replace(/\.$/, '');
}

/** The headers a Connection header names: hop-by-hop too. */
function connectionNamed(value: string | string[] | undefined): Set<string> {
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  return new Set(text.split(',').map((token) => token.trim().toLowerCase()).filter(Boolean));
}

/** An answer of the broker's own: plain text, never a credential's value. */
function answer(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(`${text}\n`) });
  res.end(`${text}\n`);
}
