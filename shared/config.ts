import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { withinEgressMax } from './network/policy.ts';
import { parseUpstreams } from './network/resolvers.ts';

// Environment variables arrive as strings; these helpers turn them into typed values with a
// message that says what was expected, so a bad deployment fails at start naming the variable.
const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce
    .number({ error: 'expected a whole number' })
    .int({ error: 'expected a whole number' })
    .min(min, { error: `expected a whole number of at least ${min}` })
    .max(max, { error: `expected a whole number of at most ${max}` });

const positiveNumber = z.coerce
  .number({ error: 'expected a number' })
  .positive({ error: 'expected a positive number' });

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'expected true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const url = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    { error: `expected a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}` },
  );

/** PADDOCK_EGRESS_RESOLVERS, which the egress gateway reads too (workers/egress-gateway-config.ts). */
export const egressResolvers = z
  .string()
  .optional()
  .superRefine((value, ctx) => {
    try {
      parseUpstreams(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  });

/** A comma-separated list, each item checked by `item`; spaces around items and empty items are ignored. */
const list = (item: z.ZodString) =>
  z
    .string()
    .transform((v) => v.split(',').map((s) => s.trim()).filter((s) => s !== ''))
    .pipe(z.array(item));

const HEX_KEY = /^[0-9a-fA-F]{64}$/;

export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('production'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: int(0, 65535).default(3000),
  /**
   * A listening socket the API inherits, by descriptor, instead of binding HOST:PORT: the launcher
   * bound it, so no other process can take the port between its choice and the API's start.
   */
  PADDOCK_LISTEN_FD: int(3, 65535).optional(),
  DATABASE_URL: url(['postgres:', 'postgresql:']),
  PADDOCK_DB_POOL_MAX: int(1, 1000).default(10),
  REDIS_URL: url(['redis:', 'rediss:']),
  PADDOCK_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]{1,64}$/, { error: 'expected 1-64 letters, digits, ":", "_" or "-"' })
    .default('paddock'),
  PADDOCK_JWT_SECRET: z.string().min(32, { error: 'expected at least 32 characters' }).optional(),
  /** While rotating: former JWT secrets whose tokens are still accepted (never used to sign). */
  PADDOCK_JWT_SECRET_PREVIOUS: list(z.string().min(32, { error: 'expected comma-separated secrets of at least 32 characters each' })).optional(),
  PADDOCK_JWT_TTL_SECONDS: int(60, 7 * 24 * 3600).default(3600),
  PADDOCK_SECRETS_KEY: z.string().regex(HEX_KEY, { error: 'expected 64 hex characters (a 32-byte key)' }).optional(),
  /** While rotating: former secrets keys that still decrypt (never used to encrypt). */
  PADDOCK_SECRETS_KEY_PREVIOUS: list(z.string().regex(HEX_KEY, { error: 'expected comma-separated keys of 64 hex characters (32 bytes) each' })).optional(),
  PADDOCK_SECRETS_MAX_PER_ACCOUNT: int(1).default(200),
  PADDOCK_SECRETS_MAX_PER_SANDBOX: int(1).default(50),
  PADDOCK_SECRETS_MAX_BYTES_PER_ACCOUNT: int(1024).default(512 * 1024),
  PADDOCK_SECRETS_MAX_BYTES_PER_SANDBOX: int(1024).default(128 * 1024),
  PADDOCK_SCRYPT_LOG_N: int(10, 20).default(15),
  PADDOCK_API_KEY_CACHE_SECONDS: int(0, 3600).default(300),
  PADDOCK_READ_CACHE_SECONDS: int(0, 3600).default(10),
  PADDOCK_RATE_SANDBOX_OPS_PER_MIN: int(1).default(120),
  PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: int(1).default(20),
  PADDOCK_RATE_AUTH_PER_MIN: int(1).default(10),
  PADDOCK_RATE_ACCOUNT_PER_MIN: int(1).default(120),
  PADDOCK_TRUST_PROXY: bool.default(false),
  PADDOCK_HTTP_HEADERS_TIMEOUT_SECONDS: int(1, 600).default(10),
  PADDOCK_HTTP_REQUEST_TIMEOUT_SECONDS: int(1, 3600).default(120),
  PADDOCK_HTTP_KEEPALIVE_TIMEOUT_SECONDS: int(1, 3600).default(5),
  PADDOCK_HTTP_MAX_CONNECTIONS: int(16).default(4096),
  PADDOCK_HTTP_MAX_CONNECTIONS_PER_IP: int(1).default(256),
  PADDOCK_HTTP_MAX_CONNECTIONS_PER_ACCOUNT: int(1).default(256),
  /** After an answer sent before its request's body was read, that body is read and dropped this long at most, then the connection is cut (0: at once). */
  PADDOCK_HTTP_LINGER_SECONDS: int(0, 60).default(5),
  /** …and this many of its bytes at most; a body declared larger is not waited for. */
  PADDOCK_HTTP_LINGER_BYTES: int(0).default(8 * 1024 * 1024),
  PADDOCK_BODY_LIMIT_BYTES: int(1024).default(1024 * 1024),
  PADDOCK_QUOTA_CONCURRENT_SANDBOXES: int(0).default(2),
  PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS: positiveNumber.default(20),
  /** Bytes of snapshots (compressed, as stored) one account may keep, all together. */
  PADDOCK_QUOTA_SNAPSHOT_BYTES: int(0).default(5 * 1024 * 1024 * 1024),
  /** A snapshot is deleted this long after it was taken. */
  PADDOCK_SNAPSHOT_RETENTION_DAYS: positiveNumber.default(7),
  /** Where snapshots are stored: a directory every API and worker process reaches (unset: <PADDOCK_DATA_DIR>/snapshots). */
  PADDOCK_SNAPSHOT_DIR: z.string().min(1).optional(),
  /**
   * How long a sandbox created with snapshotOnDestroy may take, once its processes are ended, for
   * the copy of its workspace before it is destroyed; past it the snapshot is given up, never the
   * cap. Below the runtimes' own deadline grace, which ends the sandbox whatever Paddock does.
   */
  PADDOCK_SNAPSHOT_FINAL_GRACE_SECONDS: int(1).default(60),
  /** A sandbox's egress when its create names none (shared/network/policy.ts); unset: none, or all with PADDOCK_LOCAL_NETWORK. */
  PADDOCK_DEFAULT_EGRESS: z.enum(['none', 'all']).optional(),
  /** The most any request may open: none, allow (listed domains and addresses) or all. */
  PADDOCK_EGRESS_MAX: z.enum(['none', 'allow', 'all']).default('all'),
  /** The DNS servers sandboxes' allowed names are resolved with (198.51.100.2, 198.51.100.2:5353, [2001:db8::1]:53, comma-separated); unset: the host's. */
  PADDOCK_EGRESS_RESOLVERS: egressResolvers,
  /** A PEM file of authorities trusted for brokered hosts' TLS besides the system's (a host with a private authority). */
  PADDOCK_EGRESS_UPSTREAM_CA: z
    .string()
    .optional()
    .superRefine((value, ctx) => {
      if (value === undefined) return;
      try {
        if (!readFileSync(value, 'utf8').includes('-----BEGIN CERTIFICATE-----')) ctx.addIssue({ code: 'custom', message: `${value} holds no PEM certificate` });
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `cannot read ${value}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` });
      }
    }),
  PADDOCK_SESSION_CAP_SECONDS: int(1).default(1800),
  PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS: int(1).default(60),
  PADDOCK_REAPER_SWEEP_SECONDS: int(1).default(30),
  /** Pre-started sandboxes kept ready per pooled image, claimed by creates; 0: no pool. */
  PADDOCK_WARM_POOL_SIZE: int(0, 1000).default(0),
  /** Comma-separated images to pool; empty: the default image alone. */
  PADDOCK_WARM_POOL_IMAGES: z.string().default(''),
  /** A pooled sandbox not claimed this long is replaced by a fresh one. */
  PADDOCK_WARM_POOL_MAX_AGE_SECONDS: int(60).default(3600),
  /** Pooled sandboxes of one image a refill starts at once. */
  PADDOCK_WARM_POOL_REFILL_CONCURRENCY: int(1, 64).default(4),
  PADDOCK_WORKER_CONCURRENCY: int(1, 1000).default(20),
  /** Port of the worker's /metrics and /healthz; 0 picks a free one. */
  PADDOCK_WORKER_METRICS_PORT: int(0, 65535).default(0),
  /** Interface of the worker's /metrics and /healthz: loopback unless opened (a container's own network, for probes and scrapers). */
  PADDOCK_WORKER_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** How long a worker holds a job before others may take it over (a dead worker's jobs wait this long). */
  PADDOCK_JOB_LOCK_SECONDS: int(1, 600).default(30),
  PADDOCK_RUNTIME: z.enum(['local', 'kubernetes']).default('local'),
  PADDOCK_EXEC_TIMEOUT_DEFAULT_SECONDS: int(1).default(60),
  PADDOCK_EXEC_TIMEOUT_MAX_SECONDS: int(1).default(900),
  PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS: int(1, 3600).default(30),
  PADDOCK_INFLIGHT_EXEC_PER_SANDBOX: int(1).default(8),
  PADDOCK_INFLIGHT_EXEC_PER_ACCOUNT: int(1).default(16),
  PADDOCK_INFLIGHT_FILES_PER_SANDBOX: int(1).default(8),
  PADDOCK_INFLIGHT_FILES_PER_ACCOUNT: int(1).default(16),
  /** Terminals open at once per sandbox and per account, on all API replicas together. */
  PADDOCK_INFLIGHT_TERMINAL_PER_SANDBOX: int(1).default(4),
  PADDOCK_INFLIGHT_TERMINAL_PER_ACCOUNT: int(1).default(8),
  /** Remote MCP messages (POST /v1/mcp) in progress at once per account, on all API replicas together. */
  PADDOCK_INFLIGHT_MCP_PER_ACCOUNT: int(1).default(16),
  /** A terminal with neither input nor output for this long is closed (code 4002). */
  PADDOCK_TERMINAL_IDLE_SECONDS: int(1).default(900),
  /** How long a terminal ticket (POST …/terminal/tickets) may wait to be used. */
  PADDOCK_TERMINAL_TICKET_SECONDS: int(1, 3600).default(60),
  /** Per stream (stdout, stderr): output beyond this is cut and flagged. */
  PADDOCK_EXEC_OUTPUT_MAX_BYTES: int(1024).default(1024 * 1024),
  /** Each account's command output one web process passes on, per second (0: no limit), after a burst of PADDOCK_EXEC_OUTPUT_BURST_BYTES. */
  PADDOCK_EXEC_OUTPUT_BYTES_PER_SECOND: int(0).default(8 * 1024 * 1024),
  PADDOCK_EXEC_OUTPUT_BURST_BYTES: int(64 * 1024).default(1024 * 1024),
  /** Largest file content a files route reads or writes, and the body limit of exec and file create. */
  PADDOCK_FILE_MAX_BYTES: int(1024).default(10 * 1024 * 1024),
  /** Per stream of a background process: the last this many bytes are kept, in the sandbox. */
  PADDOCK_PROCESS_OUTPUT_KEEP_BYTES: int(1024).default(1024 * 1024),
  /** Background processes one sandbox may run at once; as many ended ones are kept for their output. */
  PADDOCK_PROCESS_MAX_PER_SANDBOX: int(1, 1000).default(16),
  /**
   * The domain previews are served under, each port of each sandbox a host of its own:
   * `<port>-<id without sbx_>.<domain>`, over https. Unset: `*.localhost` on the API's own port,
   * over http. A domain of its own (docs/deploy.md): never the API's domain or a parent of it.
   */
  PADDOCK_PREVIEW_DOMAIN: z
    .string()
    .regex(/^(?=.{1,200}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/, { error: 'must be a lower-case domain name' })
    .optional(),
  /**
   * The host clients reach the API at (api.example.com), required with PADDOCK_PREVIEW_DOMAIN: a
   * preview domain equal to it or above it would let a tenant's app set cookies the API receives.
   */
  PADDOCK_API_HOST: z
    .string()
    .regex(/^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/, { error: 'must be a lower-case host name' })
    .optional(),
  /** Ports of one sandbox that may have a preview at once. */
  PADDOCK_PREVIEW_MAX_PORTS: int(1, 1000).default(10),
  /** Connections through one sandbox's previews at once, over every API process. */
  PADDOCK_PREVIEW_MAX_CONNECTIONS: int(1, 100_000).default(100),
  /**
   * A connection through a preview with nothing moving either way for this long is closed; one
   * whose program has not begun its answer by then is answered 504.
   */
  PADDOCK_PREVIEW_IDLE_TIMEOUT_SECONDS: int(1, 3600).default(300),
  /** Largest archive body (as sent, compressed or not) an archive upload takes; past it, 413. */
  PADDOCK_ARCHIVE_MAX_BYTES: int(1024).default(1024 * 1024 * 1024),
  PADDOCK_ARCHIVE_TIMEOUT_SECONDS: int(1).default(900),
  /**
   * Bulk transfers (archives) share a web process fairly by account: while several accounts
   * transfer, each has as many flowing as the one with fewest, and an account's flowing ones give
   * way to its waiting ones after this long (0: no fair share, every transfer flows).
   */
  PADDOCK_BULK_TURN_MS: int(0, 60_000).default(1000),
  // local runtime (bubblewrap on this host)
  PADDOCK_DATA_DIR: z.string().min(1).default('.paddock/data'),
  /** Read as PADDOCK_DEFAULT_EGRESS=all where that is unset (defaultEgress). */
  PADDOCK_LOCAL_NETWORK: bool.default(false),
  PADDOCK_LOCAL_MEMORY_MB: int(16).default(1024),
  PADDOCK_LOCAL_PIDS_MAX: int(8).default(512),
  /** CPU cores one local sandbox may use: a busy loop in one must not starve the host. */
  PADDOCK_LOCAL_CPUS: positiveNumber.default(1),
  /** All local sandboxes together: a weight in percent of one ordinary process group's, or `idle`, the CPU time the control plane beside them leaves. */
  PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT: z.union([z.literal('idle'), int(1, 100)], { error: 'expected idle or a whole number from 1 to 100' }).default(25),
  PADDOCK_LOCAL_ALLOW_UNLIMITED: bool.default(false),
  PADDOCK_LOCAL_DISK_MB: int(0).default(2048),
  PADDOCK_LOCAL_DISK_INODES: int(1024).default(131_072),
  PADDOCK_LOCAL_DISK_MBPS: int(0).default(512),
  /** Each sandbox's init is the agent that starts its commands (no nsenter per exec); false: nsenter for every command. */
  PADDOCK_LOCAL_AGENT: bool.default(true),
  /** Seconds past its session cap at which a local sandbox's own init ends it, with or without a live Paddock process. */
  PADDOCK_LOCAL_DEADLINE_GRACE_SECONDS: int(0).default(120),
  // kubernetes runtime (KUBECONFIG, or the in-cluster service account, says which cluster)
  PADDOCK_KUBE_NAMESPACE: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: 'expected a namespace name' }).default('paddock-sandboxes'),
  PADDOCK_KUBE_DEFAULT_IMAGE: z.string().min(1).default('docker.io/library/debian:bookworm-slim'),
  /** Comma-separated images a request may ask for; "*" allows any. The default image is always allowed. */
  PADDOCK_KUBE_ALLOWED_IMAGES: z.string().default(''),
  PADDOCK_KUBE_RUNTIME_CLASS: z.string().min(1).optional(),
  PADDOCK_KUBE_CPU_REQUEST: z.string().min(1).default('250m'),
  PADDOCK_KUBE_CPU_LIMIT: z.string().min(1).default('1'),
  PADDOCK_KUBE_MEMORY_REQUEST: z.string().min(1).default('256Mi'),
  PADDOCK_KUBE_MEMORY_LIMIT: z.string().min(1).default('1Gi'),
  PADDOCK_KUBE_DEADLINE_GRACE_SECONDS: int(0).default(120),
  /**
   * The egress gateway's Service: its cluster IPv4 address, or its name, resolved once at start
   * (paddock-egress-gateway.paddock.svc). Every sandbox pod's DNS, and what lets egress policies
   * name domains and secrets be brokered; unset: neither.
   */
  PADDOCK_EGRESS_GATEWAY: z
    .string()
    .regex(/^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$/, { error: "expected the egress gateway Service's cluster IPv4 address or its name" })
    .optional(),
  /** The namespace the egress gateway's pods run in (their NetworkPolicy admission names it). */
  PADDOCK_EGRESS_GATEWAY_NAMESPACE: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: 'expected a namespace name' }).default('paddock'),
  PADDOCK_SHUTDOWN_TIMEOUT_SECONDS: int(1).default(25),
  // events and webhooks (docs/api.md, "Events and webhooks"; docs/configuration.md)
  /** How long before its cap a sandbox.expiring event is recorded; 0: none. */
  PADDOCK_EXPIRY_WARNING_SECONDS: int(0).default(300),
  PADDOCK_EVENT_RETENTION_DAYS: int(1, 3650).default(30),
  /** Event streams (Server-Sent Events) one account may hold open on one API process. */
  PADDOCK_EVENT_STREAMS_PER_ACCOUNT: int(1, 1000).default(5),
  /** Encrypts webhook signing secrets at rest; held by the web and the worker (which signs). */
  PADDOCK_WEBHOOK_SECRETS_KEY: z.string().regex(HEX_KEY, { error: 'expected 64 hex characters (a 32-byte key)' }).optional(),
  PADDOCK_WEBHOOK_RETRY_HOURS: positiveNumber.default(24),
  /** The first retry's delay; each next one doubles (with jitter), up to PADDOCK_WEBHOOK_BACKOFF_MAX_SECONDS. */
  PADDOCK_WEBHOOK_BACKOFF_BASE_MS: int(10).default(5000),
  PADDOCK_WEBHOOK_BACKOFF_MAX_SECONDS: int(1).default(3600),
  /** A delivery that has no 2xx within this long failed (docs/api.md, "Events and webhooks": 10 s). */
  PADDOCK_WEBHOOK_TIMEOUT_SECONDS: int(1, 10).default(10),
  /** At most this much of a receiver's answer is read; the rest is dropped with the connection. */
  PADDOCK_WEBHOOK_RESPONSE_MAX_BYTES: int(0).default(64 * 1024),
  /** Deliveries in progress to one endpoint at once, across all workers. */
  PADDOCK_WEBHOOK_CONCURRENCY_PER_ENDPOINT: int(1, 100).default(4),
  /**
   * Deliveries in progress for one account at once (all its endpoints), across all workers: an
   * account whose receivers never answer holds at most this many worker slots.
   */
  PADDOCK_WEBHOOK_CONCURRENCY_PER_ACCOUNT: int(1, 1000).default(8),
  /** Webhook jobs one worker process runs at once (a queue of their own, beside the sandbox jobs). */
  PADDOCK_WEBHOOK_WORKER_CONCURRENCY: int(1, 1000).default(50),
  PADDOCK_WEBHOOK_MAX_PER_ACCOUNT: int(1, 1000).default(10),
  /** After a secret rotation, the former secret also signs for this long. */
  PADDOCK_WEBHOOK_SECRET_ROTATION_HOURS: positiveNumber.default(24),
  /** Development only: http:// to localhost and 127.0.0.1 (and nothing else) is allowed. */
  PADDOCK_WEBHOOK_ALLOW_LOCAL: bool.default(false),
  PADDOCK_METRICS_TOKEN: z.string().min(16, { error: 'expected at least 16 characters' }).optional(),
  PADDOCK_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Role = 'web' | 'worker' | 'release' | 'tool';

/**
 * Parses the environment once; throws a ConfigError naming every bad variable. The credentials'
 * secrets are required in production only by the role that uses them, the API.
 */
export function parseConfig(env: Record<string, string | undefined>, role: Role = 'web'): Config {
  // An empty variable is treated as unset, as most process managers cannot unset one.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = configSchema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? '(config)');
      const message = issue.code === 'invalid_type' && cleaned[name] === undefined ? 'is required' : issue.message;
      return `  ${name}: ${message}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const config = result.data;
  const preview = previewDomainProblem(config);
  if (preview) throw new ConfigError(`Invalid configuration:\n  ${preview}`);
  if (!withinEgressMax(defaultEgress(config), config.PADDOCK_EGRESS_MAX)) {
    throw new ConfigError(`Invalid configuration:\n  PADDOCK_DEFAULT_EGRESS: ${defaultEgress(config)} opens more than PADDOCK_EGRESS_MAX (${config.PADDOCK_EGRESS_MAX}) admits`);
  }
  if (config.NODE_ENV === 'production' && role === 'web') {
    const missing = [
      !config.PADDOCK_JWT_SECRET && '  PADDOCK_JWT_SECRET: is required outside development (at least 32 random characters)',
      !config.PADDOCK_SECRETS_KEY && '  PADDOCK_SECRETS_KEY: is required outside development (64 hex characters)',
    ].filter(Boolean);
    if (missing.length) throw new ConfigError(`Invalid configuration:\n${missing.join('\n')}`);
  }
  return config;
}

/** A sandbox's egress when its create names none. */
export function defaultEgress(config: Pick<Config, 'PADDOCK_DEFAULT_EGRESS' | 'PADDOCK_LOCAL_NETWORK'>): 'none' | 'all' {
  return config.PADDOCK_DEFAULT_EGRESS ?? (config.PADDOCK_LOCAL_NETWORK ? 'all' : 'none');
}

/**
 * Previews are served from a domain of their own: a tenant's app may set cookies for its preview's
 * domain, which must never reach the API (docs/deploy.md).
 */
function previewDomainProblem(config: Pick<Config, 'PADDOCK_PREVIEW_DOMAIN' | 'PADDOCK_API_HOST'>): string | undefined {
  const domain = config.PADDOCK_PREVIEW_DOMAIN;
  if (!domain) return undefined;
  if (!domain.includes('.')) return `PADDOCK_PREVIEW_DOMAIN: ${domain} is a top-level name; previews need a registrable domain of their own`;
  const api = config.PADDOCK_API_HOST;
  if (!api) return 'PADDOCK_API_HOST: is required with PADDOCK_PREVIEW_DOMAIN, to check that the preview domain is not the API\'s or above it';
  // An app may set cookies for any domain above its own host up to the registrable one: so no
  // domain from the preview domain up to its last two labels may hold the API's host. (Without the
  // public suffix list, two labels stand for a registrable domain; under a suffix such as co.uk
  // this refuses more than it must, never less.)
  const labels = domain.split('.');
  for (let i = 0; i <= labels.length - 2; i++) {
    const above = labels.slice(i).join('.');
    if (api === above || api.endsWith(`.${above}`)) {
      return `PADDOCK_PREVIEW_DOMAIN: must be a registrable domain of its own, not the API's host (${api}) nor under its domain (${above}): an app in a preview could set cookies the API receives`;
    }
  }
  return undefined;
}

/** Variables that look like ours but that the schema does not know: almost always a typo. */
export function unknownPaddockVariables(env: Record<string, string | undefined>): string[] {
  const known = new Set(Object.keys(configSchema.shape));
  return Object.keys(env).filter((k) => k.startsWith('PADDOCK_') && !known.has(k) && !EXTRA_KNOWN.has(k));
}

// Variables read by other parts (the CLI, the dev stack, the egress gateway) and not by the API's and workers' processes.
const EXTRA_KNOWN = new Set(['PADDOCK_BASE_URL', 'PADDOCK_API_KEY', 'PADDOCK_HOME', 'PADDOCK_EGRESS_CA_DIR', 'PADDOCK_EGRESS_GATEWAY_LISTEN', 'PADDOCK_EGRESS_GATEWAY_PORTS']);

/** Parses process.env or stops the process with a message naming the bad variable. */
export function loadConfigOrExit(role: Role): Config {
  try {
    const config = parseConfig(process.env, role);
    for (const name of unknownPaddockVariables(process.env)) {
      process.stderr.write(`warning: unknown configuration variable ${name} is ignored\n`);
    }
    return config;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
}
