import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// Bytes read from a socket or a pipe live outside V8's heap, each chunk held by a JavaScript
// object of a few hundred bytes. The young generation fills (and a scavenge frees the dead chunks)
// only after gigabytes of them, and V8 starts a full collection for external memory only 64 MB
// past its last one: a process that moves bulk data (an archive, a command's output) holds ~64 MB
// of dead chunks before anything frees them, whatever its flow control keeps in flight. Counting
// the bytes that pass and running a scavenge every few MiB bounds the dead chunks to that; a
// scavenge costs about what the live young objects do (well under a millisecond here), and on a
// 1 GiB transfer the recycled memory makes the copy faster, not slower (bench/archives.ts).

/** Bytes that may pass between two scavenges. */
export const RECLAIM_EVERY_BYTES = 4 * 1024 * 1024;

type Collect = (options: { type: 'minor'; execution: 'sync' }) => void;

let collect: Collect | undefined | null = null;
let since = 0;

// A scavenge asked for while V8 marks the old generation incrementally makes it finish the marking
// at once: one pause of the whole major collection (46 ms seen under `npm run bench -- abuse`,
// against well under a millisecond for the scavenge). While it marks, no scavenge is asked for:
// the major collection that ends the marking frees the dead chunks anyway. V8 reports the start of
// a marking and the end of a collection as 'gc' entries, made in the loop's next check phase by
// Node's own (native) immediates; the scavenge waits for an immediate of ours, which runs after
// those, and reads the entries made so far. A marking whose end was never seen counts as over
// after MARKING_AT_MOST_MS, so that the scavenges never stop for good.
const MARKING_AT_MOST_MS = 1000;
let markingSince: number | undefined;
let observer: PerformanceObserver | undefined;
let due = false;

function note(entries: readonly PerformanceEntry[]): void {
  for (const entry of entries) {
    const kind = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL) markingSince ??= entry.startTime;
    else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) markingSince = undefined;
  }
}

function marking(): boolean {
  note(observer?.takeRecords() ?? []);
  if (markingSince === undefined) return false;
  if (performance.now() - markingSince < MARKING_AT_MOST_MS) return true;
  markingSince = undefined;
  return false;
}

/** V8's collector, as a context made after `--expose-gc` gets it; undefined where V8 refuses. */
function collector(): Collect | undefined {
  if (collect !== null) return collect;
  const exposed = (globalThis as { gc?: Collect }).gc;
  if (exposed) collect = exposed;
  else {
    try {
      setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as Collect;
    } catch {
      collect = undefined;
    }
  }
  if (collect) {
    observer = new PerformanceObserver((list) => note(list.getEntries()));
    observer.observe({ entryTypes: ['gc'] });
  }
  return collect;
}

/**
 * Counts `bytes` of bulk data that this process read from outside or made to send; every few MiB,
 * a scavenge, in the loop's next check phase (steps passed within one turn share it).
 */
export function bytesMoved(bytes: number): void {
  since += bytes;
  if (since < RECLAIM_EVERY_BYTES || due) return;
  since = 0;
  const scavenge = collector();
  if (!scavenge) return;
  due = true;
  setImmediate(() => {
    due = false;
    if (!marking()) scavenge({ type: 'minor', execution: 'sync' });
  });
}
