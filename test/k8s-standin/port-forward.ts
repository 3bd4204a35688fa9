import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket, WebSocketServer } from 'ws';
import { PortNotListeningError, type SandboxRuntime } from '../../shared/runtime/types.ts';
import { isAuthorized, POD_PORTFORWARD } from './rest.ts';
import { badRequest, refuseUpgrade, StatusError, unauthorized } from './status.ts';
import type { PodStore } from './store.ts';

// The kubelet's port-forward over WebSocket: per port asked for, a data channel (2i, both ways)
// and an error channel (2i+1, toward the client), each opened with the port in two bytes,
// little-endian. Binary channel frames as exec's, without v5's close frame: the kubelet's
// port-forward speaks "v4.channel.k8s.io", or binary with no subprotocol asked for. (It also
// speaks v4's base64 variant, which the stand-in refuses.)
export const PORT_FORWARD_SUBPROTOCOLS = ['v4.channel.k8s.io'] as const;

// containerd's copy reads 32 KiB at a time, so no frame it sends is larger.
const FRAME_BYTES = 32 * 1024;
// Frames sent and not yet on the wire, past which the program's connection is not read.
const SEND_WINDOW_BYTES = 64 * 1024;
// containerd waits this long, once one direction is done, for the other before closing.
const CLOSE_GRACE_MS = 1000;

export interface PortForwardContext {
  store: PodStore;
  backend: SandboxRuntime;
  token: string;
  wss: WebSocketServer;
}

/** GET/POST …/pods/{name}/portforward?ports=P upgraded to a WebSocket, every check done before. */
export function handlePortForwardUpgrade(ctx: PortForwardContext, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  try {
    if (!isAuthorized(req, ctx.token)) throw unauthorized();
    const url = new URL(req.url ?? '/', 'http://standin');
    const m = POD_PORTFORWARD.exec(url.pathname);
    if (!m || (req.method !== 'GET' && req.method !== 'POST')) {
      throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    }
    const ports = parsePorts(url.searchParams.getAll('ports'));
    const offered = (req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    if (offered.length > 0 && !choosePortForwardSubprotocol(new Set(offered))) {
      throw badRequest(`requested protocol(s) are not supported: [${offered.join(' ')}]; supports [${PORT_FORWARD_SUBPROTOCOLS.join(' ')}]`);
    }
    const [namespace, name] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)];
    const { backendId } = ctx.store.portForwardTarget(namespace, name);
    ctx.wss.handleUpgrade(req, socket, head, (ws) => forward(ctx.backend, ws, backendId, ports));
  } catch (err) {
    refuseUpgrade(socket, err instanceof StatusError ? err : new StatusError(500, 'InternalError', String(err)));
  }
}

/** As the kubelet does: the first protocol, in the client's order, that it speaks. */
export function choosePortForwardSubprotocol(protocols: Set<string>): string | false {
  for (const p of protocols) if ((PORT_FORWARD_SUBPROTOCOLS as readonly string[]).includes(p)) return p;
  return false;
}

// As the kubelet reads them: every `ports` value, each a comma-separated list of 1-65535.
function parsePorts(values: string[]): number[] {
  if (values.length === 0) throw badRequest('query parameter "port" is required');
  const ports: number[] = [];
  for (const value of values) {
    if (value === '') throw badRequest('query parameter "port" cannot be empty');
    for (const p of value.split(',')) {
      const port = /^[0-9]{1,5}$/.test(p) ? Number(p) : NaN;
      if (!(port <= 65535)) throw badRequest(`unable to parse "${value}" as a port`);
      if (port < 1) throw badRequest(`port "${value}" must be > 0`);
      ports.push(port);
    }
  }
  return ports;
}

interface Forward {
  port: number;
  conn?: Duplex;
  /** Frames that came before the connection was made; the WebSocket is not read meanwhile. */
  early: Buffer[];
  /** A write to the connection waits for its drain; the WebSocket is not read meanwhile. */
  blocked: boolean;
  done: boolean;
  grace?: NodeJS.Timeout;
}

/**
 * As containerd does, per port: the connection is dialled at once, from inside the sandbox, and
 * its bytes copied both ways until one direction ends, then a second's grace for the other; a
 * failure (a refused dial first of all) is told on the error channel in the kubelet's words. The
 * WebSocket is read by one loop for every channel, which waits while a write to a connection
 * waits, and a connection is read while the WebSocket keeps up.
 */
function forward(backend: SandboxRuntime, ws: WebSocket, backendId: string, ports: number[]): void {
  const wsClosed = new AbortController();
  const forwards: Forward[] = ports.map((port) => ({ port, early: [], blocked: false, done: false }));
  const send = (channel: number, data: Uint8Array, done?: () => void) => {
    if (ws.readyState !== ws.OPEN) return done?.();
    ws.send(Buffer.concat([Buffer.of(channel), data]), () => done?.());
  };
  const portBytes = (port: number) => {
    const bytes = Buffer.alloc(2);
    bytes.writeUInt16LE(port);
    return bytes;
  };
  const readWebSocket = () => {
    if (forwards.every((f) => f.done || (f.conn && !f.blocked))) ws.resume();
  };
  const finish = (f: Forward, err?: Error) => {
    if (f.done) return;
    f.done = true;
    clearTimeout(f.grace);
    f.early = [];
    f.conn?.destroy();
    if (err) send(2 * forwards.indexOf(f) + 1, Buffer.from(kubeletError(backendId, f.port, err)));
    readWebSocket();
    if (forwards.every((x) => x.done) && ws.readyState === ws.OPEN) ws.close(1000);
  };
  const writeToConn = (f: Forward, data: Buffer) => {
    // A connection the program closed takes nothing more: its bytes go where a reset's would.
    if (f.conn!.destroyed || f.conn!.writableEnded) return;
    if (f.conn!.write(data)) return;
    f.blocked = true;
    ws.pause();
    f.conn!.once('drain', () => {
      f.blocked = false;
      readWebSocket();
    });
  };

  forwards.forEach((f, i) => {
    send(2 * i, portBytes(f.port));
    send(2 * i + 1, portBytes(f.port));
  });
  ws.on('message', (raw: RawData, isBinary: boolean) => {
    const frame = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
    if (!isBinary || frame.length < 2 || frame[0]! % 2 !== 0) return;
    const f = forwards[frame[0]! / 2];
    if (!f || f.done) return;
    const data = frame.subarray(1);
    if (!f.conn) {
      f.early.push(data);
      return ws.pause();
    }
    writeToConn(f, data);
  });
  ws.on('error', () => undefined);
  ws.on('close', () => {
    wsClosed.abort();
    // The client's direction is over; the program's gets its grace, as after any one direction.
    for (const f of forwards) if (!f.done && f.conn) f.grace ??= setTimeout(() => finish(f), CLOSE_GRACE_MS);
  });

  for (const f of forwards) {
    backend.openPort(backendId, f.port, { signal: wsClosed.signal }).then(
      (conn) => {
        if (f.done || wsClosed.signal.aborted) return void conn.destroy();
        f.conn = conn;
        const channel = 2 * forwards.indexOf(f);
        conn.on('data', (chunk: Buffer) => {
          for (let at = 0; at < chunk.length; at += FRAME_BYTES) {
            const piece = chunk.subarray(at, at + FRAME_BYTES);
            if (ws.bufferedAmount < SEND_WINDOW_BYTES) send(channel, piece);
            else {
              conn.pause();
              send(channel, piece, () => conn.resume());
            }
          }
        });
        // The program's direction is over: the client's gets its grace.
        conn.on('end', () => (f.grace ??= setTimeout(() => finish(f), CLOSE_GRACE_MS)));
        conn.on('error', (err) => finish(f, err));
        conn.on('close', () => {
          if (f.grace === undefined || !conn.readableEnded) finish(f);
        });
        for (const data of f.early.splice(0)) writeToConn(f, data);
        readWebSocket();
      },
      (err: unknown) => {
        if (!wsClosed.signal.aborted) finish(f, err instanceof Error ? err : new Error(String(err)));
        else finish(f);
      },
    );
  }
}

// The kubelet's message for a failed forward (ServePortForward names the pod by its sandbox id),
// around containerd's for a dial that failed inside the pod's network namespace.
function kubeletError(sandboxId: string, port: number, err: Error): string {
  const netns = `/var/run/netns/cni-${sandboxId.replace(/^sbx_/, '')}`;
  const cause =
    err instanceof PortNotListeningError
      ? `failed to connect to localhost:${port} inside namespace "${sandboxId}", IPv4: dial tcp4 127.0.0.1:${port}: connect: connection refused ` +
        `IPv6 dial tcp6 [::1]:${port}: connect: connection refused `
      : err.message;
  return `error forwarding port ${port} to pod ${sandboxId}, uid : failed to execute portforward in network namespace "${netns}": ${cause}`;
}
