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

/** V8's collector, as a context made after `--expose-gc` gets it; undefined where V8 refuses. */
function collector(): Collect | undefined {
  if (collect !== null) return collect;
  const exposed = (globalThis as { gc?: Collect }).gc;
  if (exposed) return (collect = exposed);
  try {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as Collect;
  } catch {
    collect = undefined;
  }
  return collect;
}

/** Counts `bytes` of bulk data that this process read from outside or made to send; every few MiB, a scavenge. */
export function bytesMoved(bytes: number): void {
  since += bytes;
  if (since < RECLAIM_EVERY_BYTES) return;
  since = 0;
  collector()?.({ type: 'minor', execution: 'sync' });
}
