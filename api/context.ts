import type { RouterContext } from '@koa/router';
import type { Redis } from 'ioredis';
import type { Pool } from 'pg';
import type { Queue, QueueEvents } from 'bullmq';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { ApiKeyStore } from './auth/api-key-store.ts';
import type { PasswordHasher } from './auth/passwords.ts';
import type { DashboardTokens } from './auth/jwt.ts';
import type { TokenBuckets } from './ratelimit/token-bucket.ts';
import type { ApiMetrics } from './metrics.ts';
import type { SecretCipher } from '../shared/secrets/cipher.ts';
import type { SandboxRuntime } from '../shared/runtime/types.ts';

/** Everything a route needs, built once per process by createApp and shared by all requests. */
export interface AppDeps {
  config: Config;
  orm: MikroORM;
  /** The driver's pool under the ORM, for the few hot reads that skip the ORM. */
  pg: Pool;
  redis: Redis;
  log: Logger;
  buckets: TokenBuckets;
  apiKeys: ApiKeyStore;
  passwords: PasswordHasher;
  tokens: DashboardTokens;
  metrics: ApiMetrics;
  /** Where sandbox create and destroy jobs go. */
  queue: Queue;
  /** Completion events of those jobs, for requests that wait for a sandbox. */
  queueEvents: QueueEvents;
  /** Runs commands in sandboxes (exec and the file routes). */
  runtime: SandboxRuntime;
  /** Absent when PADDOCK_SECRETS_KEY is not set (development only): secret routes answer 503. */
  secretCipher?: SecretCipher;
}

export type Credential =
  | { kind: 'dashboard'; accountId: string }
  | { kind: 'apiKey'; accountId: string; keyId: string };

export interface AppState {
  requestId: string;
  em: EntityManager;
  auth?: Credential;
  /** The parsed JSON body, set by the body middleware on routes that take one. */
  rawBody?: unknown;
}

export type AppContext = RouterContext<AppState>;
