import { readFileSync } from 'node:fs';

// A `--cpu-prof` profile as V8 writes it (the parts the bench's readers use).

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  /** µs, on the clock the deltas add to. */
  startTime: number;
}

export function readProfile(file: string): Profile {
  return JSON.parse(readFileSync(file, 'utf8')) as Profile;
}
