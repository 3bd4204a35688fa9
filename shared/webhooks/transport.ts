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
    // A name with no address is no refusal (the metrics tell them apart); its message is the same.
    if ('refused' in address) return done({ ok: false, statusCode: null, error: address.refused, refused: !address.notFound });
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

/** Resolver errors that say the name has no address at all (as opposed to a resolver failing for now). */
const NO_SUCH_NAME = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA']);

/**
 * Resolves (the local exception aside) and checks every address; the first one is used. What the
 * delivery log says of a refused name never names what it resolved to, nor why that address is
 * refused, and reads the same for a name that does not exist: a tenant's endpoint must not become
 * a way to look up the deployment's internal names.
 */
async function pickAddress(target: WebhookTarget, transport: WebhookTransport): Promise<ResolvedAddress | { refused: string; notFound?: boolean }> {
  if (target.local) return { address: '127.0.0.1', family: 4 };
  const literal = isIP(target.hostname);
  if (literal) {
    if (refusedAddressReason(target.hostname)) return { refused: `${target.hostname} is not an address webhooks may be sent to: not connected to` };
    return { address: target.hostname, family: literal as 4 | 6 };
  }
  const refused = `${target.hostname} does not resolve to an address webhooks may be sent to: not connected to`;
  let addresses: ResolvedAddress[];
  try {
    addresses = await transport.resolve(target.hostname);
  } catch (err) {
    if (NO_SUCH_NAME.has((err as NodeJS.ErrnoException)?.code ?? '')) return { refused, notFound: true };
    throw err;
  }
  if (addresses.length === 0 || addresses.some((a) => refusedAddressReason(a.address))) return { refused, notFound: addresses.length === 0 };
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
