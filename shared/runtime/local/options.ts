import type { Logger } from '../../logger.ts';

export interface LocalRuntimeOptions {
  /** Where sandboxes live on disk; every Paddock process on this host must use the same one. */
  dataDir: string;
  /** Share the host's network (and resolv.conf); otherwise a sandbox has only its own loopback. */
  network: boolean;
  memoryMb: number;
  pidsMax: number;
  /** CPU cores one sandbox may use (a CFS quota); default 1. */
  cpus?: number;
  log?: Logger;
}
