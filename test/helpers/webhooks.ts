import { execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Socket as NetSocket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { ConnectRequest, ResolvedAddress, WebhookTransport } from '../../shared/webhooks/transport.ts';

// Webhook receivers for the tests, and the network they sit on. Every receiver is a real HTTPS
// server on 127.0.0.1 with a certificate made for the test by openssl. Deliveries reach it through
// an injected resolver and connect step: test names resolve to documentation addresses
// (203.0.113.0/24, public as far as the SSRF policy knows), and the connect step carries those,
// and only those, to the receivers on loopback. Nothing is ever sent anywhere but loopback; every
// connect request is recorded, so a test can show that a refused address never reached it.

export interface Certificate {
  key: string;
  cert: string;
}

/** A self-signed certificate for the names, made with openssl in a temporary folder. */
export function makeCertificate(names: string[]): Certificate {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-cert-'));
  try {
    const keyFile = join(dir, 'key.pem');
    const certFile = join(dir, 'cert.pem');
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', `/CN=${names[0]}`,
      '-addext', `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`,
    ], { stdio: 'ignore' });
    return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  path: string;
}

/** What the receiver does with one request: answer a status after a while, or never. */
export type Behaviour = (r: Received, index: number) => { status?: number; delayMs?: number; hang?: boolean; headers?: Record<string, string> };

export interface Receiver {
  port: number;
  received: Received[];
  /** Requests being answered right now, and the most at once. */
  inFlight(): number;
  maxInFlight(): number;
  /** When the first request ended (answered, or given up by its sender); undefined while none has. */
  firstEndedAt(): number | undefined;
  behave(b: Behaviour): void;
  close(): Promise<void>;
}

export async function startReceiver(cert: Certificate, behaviour: Behaviour = () => ({ status: 200 })): Promise<Receiver> {
  let behave = behaviour;
  const received: Received[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let firstEndedAt: number | undefined;
  const sockets = new Set<Socket>();
  const server: Server = createServer({ key: cert.key, cert: cert.cert }, (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now(), path: req.url ?? '' };
      received.push(r);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const plan = behave(r, received.length - 1);
      let counted = true;
      const uncount = () => {
        if (counted) inFlight--;
        counted = false;
        firstEndedAt ??= Date.now();
      };
      const finish = () => {
        uncount();
        if (!res.writableEnded && !res.destroyed) res.writeHead(plan.status ?? 200, plan.headers).end('ok');
      };
      res.on('close', uncount);
      if (plan.hang) return;
      if (plan.delayMs) setTimeout(finish, plan.delayMs);
      else finish();
    });
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  after(close);
  return {
    port: (server.address() as AddressInfo).port,
    received,
    inFlight: () => inFlight,
    maxInFlight: () => maxInFlight,
    firstEndedAt: () => firstEndedAt,
    behave: (b) => (behave = b),
    close,
  };
}

export interface TestNetwork {
  transport: WebhookTransport;
  /** Every connect request the deliveries made, in order. */
  connects: ConnectRequest[];
  /** Every name resolved. */
  lookups: string[];
  /** Puts a receiver at a documentation address under a name (or several). */
  host(names: string[], address: string, receiver: Receiver): void;
  /** A name resolving to these addresses (refused ones, to test the policy); a function answers per lookup. */
  dns(name: string, answer: string[] | (() => string[])): void;
}

/** The injected network: a resolver of test names and a connect step that only ever reaches loopback. */
export function testNetwork(ca: string): TestNetwork {
  const records = new Map<string, () => string[]>();
  const receivers = new Map<string, Receiver>();
  const connects: ConnectRequest[] = [];
  const lookups: string[] = [];
  const transport: WebhookTransport = {
    async resolve(hostname): Promise<ResolvedAddress[]> {
      lookups.push(hostname);
      const answer = records.get(hostname);
      if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return answer().map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
    connect(req): Socket {
      connects.push(req);
      const receiver = receivers.get(req.address);
      if (!receiver) {
        // Not on the test network: fail as an unreachable host would, without any traffic.
        const s = new NetSocket();
        process.nextTick(() => s.destroy(Object.assign(new Error(`test network: ${req.address} unreachable`), { code: 'EHOSTUNREACH' })));
        return s;
      }
      return tlsConnect({ host: '127.0.0.1', port: receiver.port, servername: req.servername, ca });
    },
  };
  return {
    transport,
    connects,
    lookups,
    host(names, address, receiver) {
      receivers.set(address, receiver);
      for (const n of names) records.set(n, () => [address]);
    },
    dns(name, answer) {
      records.set(name, typeof answer === 'function' ? answer : () => answer);
    },
  };
}

/**
 * The Standard Webhooks check, written from the specification independently of Paddock's signer:
 * the key is the base64 after "whsec_"; the signed content is "<webhook-id>.<webhook-timestamp>.<body>";
 * webhook-signature holds space-separated "v1,<base64 HMAC-SHA256>" of which one must match; the
 * timestamp must be within the tolerance of now.
 */
export function verifyStandardWebhook(secret: string, headers: IncomingHttpHeaders, body: string, toleranceSeconds = 300): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((s) => {
    const [version, sig] = s.split(',', 2);
    if (version !== 'v1' || !sig) return false;
    const given = Buffer.from(sig, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/**
 * The default network of test stacks: no name resolves and nothing connects, so a webhook a test
 * adds without meaning to deliver it (the route sweeps, the fuzzer) never causes any traffic, not
 * even a DNS query.
 */
export const offlineTransport: WebhookTransport = {
  async resolve(hostname) {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname} (offline test network)`), { code: 'ENOTFOUND' });
  },
  connect(req) {
    throw new Error(`offline test network: no connection to ${req.address}`);
  },
};
