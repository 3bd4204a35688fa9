import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { waitForRedis } from '../redis.ts';
import { isDependencyUnavailable } from '../unavailable.ts';
import { createSandboxQueue } from './catalogue.ts';
import { createWebhookQueue } from './webhooks.ts';

/** Makes of one queue before the last is kept as it is (its calls fail; /readyz says so). */
const MAKES = 5;

/**
 * A BullMQ queue whose connection has passed its first command. BullMQ checks the Redis version
 * with an INFO as a queue is made, and when that command fails the queue fails every later call,
 * for good. On a fail-fast connection (a command timeout of 2 s) a start busy enough to hold the
 * event loop past the timeout (a loaded host, a large module loading) fails it although Redis
 * answered. So the queue is made again until the check passes, while Redis answers at all.
 */
export async function readyQueue(make: () => Queue, opts: { redisUp: boolean; log: Pick<Logger, 'warn'> }): Promise<Queue> {
  let queue = make();
  // Without Redis, BullMQ waits for it on its own: start-up does not.
  if (!opts.redisUp) return queue;
  for (let made = 1; made < MAKES; made++) {
    try {
      await queue.waitUntilReady();
      return queue;
    } catch (err) {
      opts.log.warn({ err }, 'a queue failed its first command; making it again');
      // The connection is shared (given, not made by BullMQ): closing the queue leaves it open.
      await queue.close().catch(() => undefined);
      queue = make();
    }
  }
  return queue;
}

/**
 * The sandbox and webhook queues of a web or worker process, on its fail-fast `connection`: once
 * it (and `alsoWaitFor`) answers, or at once without Redis (logged), each past its first command,
 * their errors logged but those of Redis being away (each reconnect attempt; the connection's own
 * listener logs those once). Without a listener BullMQ would print them raw on stderr.
 */
export async function startQueues(connection: Redis, prefix: string, log: Pick<Logger, 'warn'>, alsoWaitFor: Redis[] = []): Promise<{ queue: Queue; webhookQueue: Queue }> {
  const redisUp = await Promise.all([connection, ...alsoWaitFor].map((r) => waitForRedis(r))).then(
    () => true,
    (err: unknown) => {
      log.warn({ err }, 'starting without Redis');
      return false;
    },
  );
  const queue = await readyQueue(() => createSandboxQueue(connection, prefix), { redisUp, log });
  const webhookQueue = await readyQueue(() => createWebhookQueue(connection, prefix), { redisUp, log });
  for (const q of [queue, webhookQueue]) {
    q.on('error', (err: Error) => {
      if (!isDependencyUnavailable(err)) log.warn({ err: err.message }, 'queue error');
    });
  }
  return { queue, webhookQueue };
}
