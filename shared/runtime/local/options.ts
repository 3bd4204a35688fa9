import type { Logger } from '../../logger.ts';
import { ImageRefusedError } from '../types.ts';
import type { SandboxesCpuWeight } from './cgroups.ts';

/**
 * What a local sandbox runs: the host's own userland (its /usr, read-only), not a container
 * image. Sandboxes report it under this name, and a create may ask for it by name.
 */
export const LOCAL_IMAGE = 'host';

/** The local runtime runs one userland only: any other image is refused, never silently ignored. */
export function resolveLocalImage(requested: string | undefined): string {
  if (requested === undefined || requested === LOCAL_IMAGE) return LOCAL_IMAGE;
  throw new ImageRefusedError(
    'not_supported',
    `The local runtime runs the host's own userland (image "${LOCAL_IMAGE}"), not container images; it cannot run "${requested}". Leave the image out.`,
  );
}

export interface LocalRuntimeOptions {
  /** Where sandboxes live on disk; every Paddock process on this host must use the same one. */
  dataDir: string;
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
  /** Reads and writes of that disk, each in MB/s (cgroup v2's io.max on its device); 0 or absent: no cap. */
  diskMbps?: number;
  /**
   * Seconds past its session cap at which a sandbox's own init ends everything in it, with or
   * without a live Paddock process (default 120, as Kubernetes' activeDeadlineSeconds grace).
   */
  deadlineGraceSeconds?: number;
  /** Run each sandbox's init as the agent that starts its commands (default true); false: every command through nsenter. */
  agent?: boolean;
  /** All sandboxes together: a weight in percent of one ordinary process group (default 25), or an idle CPU group. */
  sandboxesCpuWeight?: SandboxesCpuWeight;
  /** PADDOCK_EGRESS_RESOLVERS: the DNS servers sandboxes' allowed names are resolved with; default the host's. */
  egressResolvers?: string;
  /** PADDOCK_EGRESS_UPSTREAM_CA: a PEM file of authorities the broker trusts upstream besides the host's. */
  egressUpstreamCa?: string;
  /** Where the cgroup file systems are mounted (tests); default /sys/fs/cgroup. */
  cgroupRoot?: string;
  log?: Logger;
}
