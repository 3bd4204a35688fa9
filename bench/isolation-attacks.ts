import { setTimeout as sleep } from 'node:timers/promises';

// The attacks of bench/isolation.ts, each run by bench/isolation-attacker.ts in a process of its own.

export interface IsolationAttack {
  name: string;
  /** Concurrent loops of the attacker, each running this exec until the phase ends. */
  loops: number;
  /** Execs the attacker starts per second at most, all loops together (its sandbox_ops bucket). */
  perSecond?: number;
  body: (seconds: number) => unknown;
}

export const ISOLATION_ATTACKS: IsolationAttack[] = [
  // At the attacker's own default rate limit (sandbox_ops, 120 a minute), then without one.
  { name: 'output flood (cat /dev/zero, 2 execs/s)', loops: 4, perSecond: 2, body: (s) => ({ command: 'cat /dev/zero', timeoutSeconds: s }) },
  { name: 'output flood (4× cat /dev/zero, no rate limit)', loops: 4, body: (s) => ({ command: 'cat /dev/zero', timeoutSeconds: s }) },
  { name: 'CPU spin (4 busy loops)', loops: 1, body: (s) => ({ command: 'for i in 1 2 3 4; do (while :; do :; done) & done; wait', timeoutSeconds: s }) },
  {
    name: 'disk writes (dd 512 MiB, fsync)',
    loops: 1,
    body: (s) => ({ command: 'dd if=/dev/zero of=/workspace/f bs=1M count=512 conv=fsync 2>/dev/null; rm -f /workspace/f', timeoutSeconds: s }),
  },
];

/** The attack's loops until `end` (performance.now()), each exec's answer read whole, as a client would. */
export async function runAttack(attack: IsolationAttack, end: number, world: { url: string; key: string; sandboxId: string }): Promise<void> {
  let nextStart = performance.now();
  await Promise.all(
    Array.from({ length: attack.loops }, async () => {
      while (performance.now() < end) {
        if (attack.perSecond) {
          const at = nextStart;
          nextStart += 1000 / attack.perSecond;
          if (at > performance.now()) await sleep(at - performance.now());
          if (performance.now() >= end) break;
        }
        const left = Math.max(1, Math.ceil((end - performance.now()) / 1000));
        await fetch(`${world.url}/v1/sandboxes/${world.sandboxId}/exec`, {
          method: 'POST',
          headers: { authorization: `Bearer ${world.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(attack.body(left)),
        })
          .then((res) => res.json())
          .catch(() => undefined);
      }
    }),
  );
}
