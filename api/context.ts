import type { OpenedSecretsCache } from '../shared/secrets/opened.ts';
import type { OutputBudget } from './services/exec/output-budget.ts';
import type { BulkTransfers } from './services/bulk-transfers.ts';
import type { Snapshots } from '../shared/snapshots/snapshots.ts';
import type { Scope } from '../shared/scopes.ts';
import type { ParameterizedContext } from 'koa';
import type { Redis } from 'ioredis';
import type { Pool } from 'pg';
import type { Queue, QueueEvents } from 'bullmq';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { ApiKeyStore } from './auth/api-key-store.ts';
import type { KeySession, KeySessions } from './auth/key-sessions.ts';
import type { TerminalTickets } from './auth/terminal-tickets.ts';
import type { PasswordHasher } from './auth/passwords.ts';
import type { DashboardTokens } from './auth/jwt.ts';
import type { BucketResult, TokenBuckets } from './ratelimit/token-bucket.ts';
import type { BucketName } from './ratelimit/buckets.ts';
import type { InFlightLeases } from './ratelimit/in-flight.ts';
import type { ApiMetrics } from './metrics.ts';
import type { SecretCipher } from '../shared/secrets/cipher.ts';
import type { SandboxRuntime } from '../shared/runtime/types.ts';
import type { EventAnnouncer } from '../shared/events/announce.ts';
import type { ReadViews, ViewRead } from '../shared/cache/read-views.ts';
import type { EventHub } from './services/events/hub.ts';
import type { SandboxEngine } from '../shared/sandboxes/engine.ts';

/** Everything a route needs, built once per process by createApp and shared by all requests. */
export interface AppDeps {
  config: Config;
  orm: MikroORM;
  /** The driver's pool under the ORM, for the few hot reads that skip the ORM. */
  pg: Pool;
  redis: Redis;
  log: Logger;
  buckets: TokenBuckets;
  inFlight: InFlightLeases;
  apiKeys: ApiKeyStore;
  /** This process's open requests by API key, ended when their key is revoked (auth/key-sessions.ts). */
  keySessions: KeySessions;
  terminalTickets: TerminalTickets;
  passwords: PasswordHasher;
  tokens: DashboardTokens;
  metrics: ApiMetrics;
  /** Each account's share of this process's work on command output. */
  outputBudget: OutputBudget;
  /** Each account's fair share of this process's bulk transfers (archives). */
  bulkTransfers: BulkTransfers;
  /** Secrets opened lately, by account and sandbox (shared/secrets/opened.ts). */
  openedSecrets: OpenedSecretsCache;
  /** Where sandbox create and destroy jobs go. */
  queue: Queue;
  /** Completion events of those jobs, for requests that wait for a sandbox. */
  queueEvents: QueueEvents;
  /** Runs commands in sandboxes (exec and the file routes). */
  runtime: SandboxRuntime;
  /** Absent when PADDOCK_SECRETS_KEY is not set (development only): secret routes answer 503. */
  secretCipher?: SecretCipher;
  /** Where webhook jobs go (dispatch of new events). */
  webhookQueue: Queue;
  /** The hottest reads, kept in Redis while what they answer is unchanged. */
  views: ReadViews;
  /** Starts the delivery of events recorded by a request, after its commit. */
  events: EventAnnouncer;
  /** This process's event streams, rung through Redis pub/sub. */
  eventHub: EventHub;
  /** Absent when PADDOCK_WEBHOOK_SECRETS_KEY is not set: creating a webhook answers 503. */
  webhookCipher?: SecretCipher;
  /** Every rule of a sandbox's life: create, destroy, the waits, the running check (shared/sandboxes/engine.ts). */
  sandboxes: SandboxEngine;
  /** Workspaces kept past their sandbox (shared/snapshots/). */
  snapshots: Snapshots;
}

export type Credential =
  | { kind: 'dashboard'; accountId: string }
  /** keyHash: what a terminal ticket records, to find the key again (and see it is not revoked) when redeemed. */
  | { kind: 'apiKey'; accountId: string; keyId: string; scopes: readonly Scope[]; keyHash?: string };

export interface AppState {
  requestId: string;
  em: EntityManager;
  auth?: Credential;
  /** A request made with an API key, as one of its key's open requests: what it sends waits on `ready()`. */
  session?: KeySession;
  /** The route's token, taken by the API key's lookup in the same round trip (authenticate). */
  token?: { bucket: BucketName; result: BucketResult };
  /** The parsed JSON body, set by the body middleware on routes that take one. */
  rawBody?: unknown;
  /** A streamed body (an archive), set by the streamed-body middleware on routes that declare one. */
  streamedBody?: StreamedBody;
  /** The route's in-flight lease, once held (api/middleware/in-flight.ts). */
  lease?: HeldLease;
  /** The route's `leasedView`, read with its in-flight lease; undefined when views are off. */
  leasedView?: ViewRead;
}

/** A request's in-flight lease held, from the API key's lookup or the in-flight step: its release, and what it read. */
export interface HeldLease {
  release: () => void;
  read: (string | null)[];
}

/** A request's context: Koa's, with its route's parameters (set by api/routes/shaped-router.ts). */
export type AppContext = ParameterizedContext<AppState> & { params: Record<string, string> };

/** A request body read as it comes: its media type, and its chunks, counted and cut at the limit. */
export interface StreamedBody {
  mediaType: string;
  /** The body's chunks; past the route's limit it throws payload_too_large. Read it once. */
  chunks: AsyncIterable<Uint8Array>;
  /** Bytes read so far. */
  received(): number;
}
