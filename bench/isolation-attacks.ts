import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseConfig } from '../shared/config.ts';

// The attacks of bench/isolation.ts, each run by bench/isolation-attacker.ts in a process of its own.

export interface IsolationAttack {
  name: string;
  /** Concurrent loops of the attacker, each running this exec until the phase ends. */
  loops: number;
  /** Execs the attacker starts per second at most, all loops together (its sandbox_ops bucket's refill alone). */
  perSecond?: number;
  /**
   * The attacker keeps to its account's default sandbox_ops bucket itself (its whole burst at
   * once, then the refill): the bench's stack lifts every limit so that the neighbour, one account
   * measured back to back, is never refused, and the attacker must get no more than it would.
   */
  defaultBucket?: boolean;
  /** The answer's media type: a buffered JSON answer unless this asks for NDJSON lines. */
  accept?: 'application/x-ndjson';
  body: (seconds: number) => unknown;
}

export const ISOLATION_ATTACKS: IsolationAttack[] = [
  // At the attacker's own default rate limit (sandbox_ops, 120 a minute), then without one.
  { name: 'output flood (cat /dev/zero, 2 execs/s)', loops: 4, perSecond: 2, body: (s) => ({ command: 'cat /dev/zero', timeoutSeconds: s }) },
  {
    name: 'output flood (4× cat /dev/zero, the default bucket: its burst, then its refill)',
    loops: 4,
    defaultBucket: true,
    body: (s) => ({ command: 'cat /dev/zero', timeoutSeconds: s }),
  },
  {
    name: 'output flood, streamed (4× cat /dev/zero as NDJSON lines, the default bucket)',
    loops: 4,
    defaultBucket: true,
    accept: 'application/x-ndjson',
    body: (s) => ({ command: 'cat /dev/zero', timeoutSeconds: s }),
  },
  { name: 'CPU spin (4 busy loops)', loops: 1, body: (s) => ({ command: 'for i in 1 2 3 4; do (while :; do :; done) & done; wait', timeoutSeconds: s }) },
  {
    name: 'disk writes (dd 512 MiB, fsync)',
    loops: 1,
    body: (s) => ({ command: 'dd if=/dev/zero of=/workspace/f bs=1M count=512 conv=fsync 2>/dev/null; rm -f /workspace/f', timeoutSeconds: s }),
  },
];

/** The attack's loops until `end` (performance.now()), each exec's answer read whole, as a client would; what it got. */
export async function runAttack(
  attack: IsolationAttack,
  end: number,
  world: { url: string; key: string; sandboxId: string },
): Promise<{ statuses: Record<number, number>; megabytes: number }> {
  let nextStart = performance.now();
  const bucket = attack.defaultBucket ? new Bucket(defaultSandboxOpsPerMinute()) : undefined;
  const statuses = new Map<number, number>();
  let bytes = 0;
  await Promise.all(
    Array.from({ length: attack.loops }, async () => {
      while (performance.now() < end) {
        if (attack.perSecond) {
          const at = nextStart;
          nextStart += 1000 / attack.perSecond;
          if (at > performance.now()) await sleep(at - performance.now());
          if (performance.now() >= end) break;
        }
        if (bucket) {
          await bucket.take();
          if (performance.now() >= end) break;
        }
        const left = Math.max(1, Math.ceil((end - performance.now()) / 1000));
        await post(`${world.url}/v1/sandboxes/${world.sandboxId}/exec`, world.key, JSON.stringify(attack.body(left)), attack.accept)
          .then(({ status, received }) => {
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            bytes += received;
          })
          .catch(() => undefined);
      }
    }),
  );
  return { statuses: Object.fromEntries(statuses), megabytes: Math.round(bytes / 2 ** 20) };
}

/**
 * One POST whose answer is read whole and dropped. The attacker stands for a client on another
 * machine, so what it spends taking its answers (a flood's is megabytes of JSON) must not be spent
 * on the two cores under test: it reads the raw bytes off a connection the server closes after the
 * answer, with no HTTP parsing past the status line (fetch spent 9 ms of CPU per MB of answer,
 * node:http 4.7, this about a tenth of that).
 */
const READ_BUFFER = Buffer.alloc(256 * 1024);

function post(url: string, key: string, body: string, accept = 'application/json'): Promise<{ status: number; received: number }> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    let head = '';
    let received = 0;
    // Read into one buffer, again and again: no allocation per read.
    const socket = connect({
      port: Number(port),
      host: hostname,
      onread: {
        buffer: READ_BUFFER,
        callback: (bytes: number, buffer: Uint8Array) => {
          received += bytes;
          if (head.length < 16) head += Buffer.from(buffer.subarray(0, Math.min(bytes, 16))).toString('latin1');
          return true;
        },
      },
    });
    socket.once('end', () => {
      socket.destroy();
      resolve({ status: Number(head.split(' ')[1]), received });
    });
    socket.once('error', reject);
    // Not half-closed: the API takes a client that closes its side as gone, and stops its command.
    socket.write(
      `POST ${pathname} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nAccept: ${accept}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

function defaultSandboxOpsPerMinute(): number {
  return parseConfig({ DATABASE_URL: 'postgres://unused', REDIS_URL: 'redis://unused' }, 'worker').PADDOCK_RATE_SANDBOX_OPS_PER_MIN;
}

/** The API's token bucket (api/middleware/rate-limit.ts): `perMinute` tokens full, refilled continuously. */
class Bucket {
  private readonly perMinute: number;
  private tokens: number;
  private at = performance.now();
  constructor(perMinute: number) {
    this.perMinute = perMinute;
    this.tokens = perMinute;
  }

  async take(): Promise<void> {
    for (;;) {
      const now = performance.now();
      this.tokens = Math.min(this.perMinute, this.tokens + ((now - this.at) * this.perMinute) / 60_000);
      this.at = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await sleep(((1 - this.tokens) * 60_000) / this.perMinute);
    }
  }
}
