import type { Logger } from '../../logger.ts';

export interface LocalRuntimeOptions {
  /** Where sandboxes live on disk; every Paddock process on this host must use the same one. */
  dataDir: string;
  /** Share the host's network (and resolv.conf); otherwise a sandbox has only its own loopback. */
  network: boolean;
  memoryMb: number;
  pidsMax: number;
  log?: Logger;
}
