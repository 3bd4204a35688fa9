import type { Logger } from '../../logger.ts';

export interface LocalRuntimeOptions {
  /** Where sandboxes live on disk; every Paddock process on this host must use the same one. */
  dataDir: string;
  /**
   * Outbound network through slirp4netns, filtered so that nothing of the host or its private
   * networks is reached (egress-filter.ts); otherwise a sandbox has only its own loopback.
   */
  network: boolean;
  memoryMb: number;
  pidsMax: number;
  /** CPU cores one sandbox may use (a CFS quota); default 1. */
  cpus?: number;
  /** Start sandboxes even when the host offers no memory and process-count limits. */
  allowUnlimited?: boolean;
  /** The size of each sandbox's own disk (its /workspace), in MiB; 0 or absent: no disk quota. */
  diskMb?: number;
  /** Files and directories that disk may hold. */
  diskInodes?: number;
  /** Where the cgroup file systems are mounted (tests); default /sys/fs/cgroup. */
  cgroupRoot?: string;
  log?: Logger;
}
