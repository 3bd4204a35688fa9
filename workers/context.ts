import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { SandboxRuntime } from '../shared/runtime/types.ts';
import type { EventAnnouncer } from '../shared/events/announce.ts';
import type { InFlightLeases } from '../shared/leases.ts';
import type { LeaseTurns } from '../shared/jobs/turns.ts';
import type { SecretCipher } from '../shared/secrets/cipher.ts';
import type { WebhookTransport } from '../shared/webhooks/transport.ts';
import type { WorkerMetrics } from './metrics.ts';
import type { SandboxLifecycle } from '../shared/sandboxes/lifecycle.ts';
import type { Snapshots } from '../shared/snapshots/snapshots.ts';

/** What every job processor and the reaper share within one worker process. */
export interface WorkerDeps {
  config: Config;
  orm: MikroORM;
  queue: Queue;
  /** The connection of both queues: work on them is skipped while it is down (see settleWithin). */
  redis: Redis;
  runtime: SandboxRuntime;
  log: Logger;
  metrics: WorkerMetrics;
  /** The webhook jobs' queue (dispatch, deliver). */
  webhookQueue: Queue;
  /** Starts the delivery of events recorded by a transition, after its commit. */
  events: EventAnnouncer;
  /** Per-endpoint and per-account bounds on deliveries in progress, across workers. */
  leases: InFlightLeases;
  /** The deliveries waiting for a slot of those bounds, parked until one frees. */
  turns: LeaseTurns;
  /** Decrypts webhook signing secrets; absent without PADDOCK_WEBHOOK_SECRETS_KEY. */
  webhookCipher?: SecretCipher;
  /** How deliveries resolve names and connect (tests inject their own). */
  transport: WebhookTransport;
  /** The workers' half of a sandbox's life: its start, failure, end and expiry warning (shared/sandboxes/lifecycle.ts). */
  sandboxes: SandboxLifecycle;
  /** Workspaces kept past their sandbox: restored into new ones, swept past their retention (shared/snapshots/). */
  snapshots: Snapshots;
}
