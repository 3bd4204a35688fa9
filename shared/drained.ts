import type { Writable } from 'node:stream';

/** Settles once `pipe` takes more, or will take nothing more (closed, failed). */
export function drained(pipe: Writable): Promise<void> {
  return new Promise((resolve) => {
    const go = () => {
      pipe.off('drain', go);
      pipe.off('close', go);
      pipe.off('error', go);
      resolve();
    };
    pipe.on('drain', go);
    pipe.on('close', go);
    pipe.on('error', go);
  });
}
