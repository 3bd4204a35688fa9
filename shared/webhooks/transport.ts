import { request as httpRequest, type IncomingMessage } from 'node:http';
import { lookup } from 'node:dns/promises';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { refusedAddressReason } from './addresses.ts';
import type { WebhookTarget } from './url-policy.ts';

// One delivery attempt, SSRF-safe: the name is resolved once, every address it resolves to is
// checked, and the connection goes to the checked address itself (no second lookup that a
// rebinding DNS could answer differently). No redirect is followed, the whole attempt has one
// deadline, and at most a bounded part of the answer is read. The resolver and the connect step
// are injected, so tests can prove a refused address never reaches the connect step.

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface ConnectRequest {
  address: string;
  family: 4 | 6;
  port: number;
  tls: boolean;
  /** The URL's host name: SNI and the certificate check (not sent for an IP literal). */
  servername: string;
}

export interface WebhookTransport {
  resolve(hostname: string): Promise<ResolvedAddress[]>;
  connect(request: ConnectRequest): Socket;
}

export const systemTransport: WebhookTransport = {
  async resolve(hostname) {
    const found = await lookup(hostname, { all: true, verbatim: true });
    return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
  },
  connect({ address, port, tls, servername }) {
    if (!tls) return netConnect({ host: address, port });
    return tlsConnect({ host: address, port, servername: isIP(servername) ? undefined : servername, ALPNProtocols: ['http/1.1'] });
  },
};

export interface AttemptRequest {
  target: WebhookTarget;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  maxResponseBytes: number;
}

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  /** Why it failed, for the delivery log: never the receiver's own words beyond its status. */
  error: string | null;
  /** True when the target was refused before any connection (a forbidden address). */
  refused: boolean;
  durationMs: number;
}

export async function attemptDelivery(req: AttemptRequest, transport: WebhookTransport): Promise<AttemptResult> {
  const started = performance.now();
  const done = (r: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), req.timeoutMs)));
  let socket: Socket | undefined;
  try {
    const address = await Promise.race([pickAddress(req.target, transport), deadline]);
    if (address === 'timeout') return done({ ok: false, statusCode: null, error: `no answer within ${req.timeoutMs} ms (resolving)`, refused: false });
    if ('refused' in address) return done({ ok: false, statusCode: null, error: address.refused, refused: true });
    socket = transport.connect({ ...address, port: req.target.port, tls: req.target.tls, servername: req.target.hostname });
    const answer = await Promise.race([send(req, socket), deadline]);
    if (answer === 'timeout') {
      socket.destroy();
      return done({ ok: false, statusCode: null, error: `no answer within ${req.timeoutMs} ms`, refused: false });
    }
    drainBounded(answer, req.maxResponseBytes, socket);
    const status = answer.statusCode ?? 0;
    if (status >= 200 && status < 300) return done({ ok: true, statusCode: status, error: null, refused: false });
    const error = status >= 300 && status < 400 ? `redirect (${status}) not followed` : `the receiver answered ${status}`;
    return done({ ok: false, statusCode: status, error, refused: false });
  } catch (err) {
    socket?.destroy();
    return done({ ok: false, statusCode: null, error: describe(err), refused: false });
  } finally {
    clearTimeout(timer);
    // Whatever is left of the answer is not ours to wait for (drainBounded reads a bounded part).
    const s = socket;
    if (s) setTimeout(() => s.destroy(), 1000).unref();
  }
}

/** Resolves (the local exception aside) and checks every address; the first one is used. */
async function pickAddress(target: WebhookTarget, transport: WebhookTransport): Promise<ResolvedAddress | { refused: string }> {
  if (target.local) return { address: '127.0.0.1', family: 4 };
  const literal = isIP(target.hostname);
  const addresses = literal ? [{ address: target.hostname, family: literal as 4 | 6 }] : await transport.resolve(target.hostname);
  if (addresses.length === 0) return { refused: `${target.hostname} resolves to no address` };
  for (const a of addresses) {
    const reason = refusedAddressReason(a.address);
    if (reason) return { refused: `${target.hostname} resolves to ${a.address}, a ${reason} address: not connected to` };
  }
  return addresses[0]!;
}

function send(req: AttemptRequest, socket: Socket): Promise<IncomingMessage> {
  const { url } = req.target;
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        method: 'POST',
        path: `${url.pathname}${url.search}`,
        headers: {
          host: url.host,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(req.body)),
          'user-agent': 'Paddock-Webhooks/1',
          connection: 'close',
          ...req.headers,
        },
        createConnection: () => socket,
      },
      resolve,
    );
    outgoing.on('error', reject);
    socket.on('error', reject);
    outgoing.end(req.body);
  });
}

/** Reads at most `max` bytes of the answer, then drops the connection. */
function drainBounded(res: IncomingMessage, max: number, socket: Socket): void {
  let read = 0;
  res.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > max) socket.destroy();
  });
  res.on('error', () => undefined);
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code) return `connection failed (${e.code})`;
  return `connection failed (${e instanceof Error ? e.message : String(err)})`.slice(0, 300);
}
