import { REFUSED_ANNOTATION_PREFIX } from '../egress-gateway.ts';
import { egressPolicyName } from '../network-policy.ts';
import { podNameFor } from '../names.ts';

// What the gateway refused each sandbox (a name its DNS refused, a connection its pass-through
// refused), counted in memory and written every few seconds where the runtime's sweep reads it:
// an annotation of the sandbox's NetworkPolicy, this replica's own, so replicas never overwrite
// each other (egress-gateway.ts). The workers' sweep turns growth into network.refused events.

const WRITE_MS = 5000;
/** Sandboxes counted at once; past it the oldest counts are dropped (their sandboxes long gone, most likely). */
const COUNTED_AT_MOST = 100_000;

export interface RefusalWriter {
  /** Sets the annotations on the NetworkPolicy of that name; false when it is gone. */
  annotate(name: string, annotations: Record<string, string>): Promise<boolean>;
}

export interface RefusalCounts {
  add(sandboxId: string): void;
  /** Writes what changed; the timer's work, callable at once. */
  flush(): Promise<void>;
  stop(): void;
}

/** Counts for this replica (`replica`: its pod's name), written through `writer`. */
export function refusalCounts(writer: RefusalWriter, replica: string): RefusalCounts {
  const key = `${REFUSED_ANNOTATION_PREFIX}${replica}`;
  const counts = new Map<string, { count: number; written: number }>();
  let flushing: Promise<void> | undefined;

  async function flush(): Promise<void> {
    for (const [id, entry] of counts) {
      if (entry.count === entry.written) continue;
      const pod = podNameFor(id);
      const count = entry.count;
      let still: boolean;
      try {
        still = pod !== undefined && (await writer.annotate(egressPolicyName(pod), { [key]: String(count) }));
      } catch {
        continue; // written at the next turn
      }
      if (!still) counts.delete(id);
      else entry.written = count;
    }
  }

  /** One write at a time: a turn of the timer during a slow one joins it. */
  const flushOnce = () => (flushing ??= flush().finally(() => (flushing = undefined)));
  const timer = setInterval(() => void flushOnce(), WRITE_MS);
  timer.unref();

  return {
    add(id) {
      const entry = counts.get(id);
      if (entry) return void entry.count++;
      if (counts.size >= COUNTED_AT_MOST) counts.delete(counts.keys().next().value!);
      counts.set(id, { count: 1, written: 0 });
    },
    flush: flushOnce,
    stop: () => clearInterval(timer),
  };
}
