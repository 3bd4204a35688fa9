import { Redis, type RedisOptions } from 'ioredis';

/**
 * A connection for request paths: when Redis is unreachable a command fails at once instead of
 * queueing, so the API can answer 503 quickly rather than hang. Not auto-pipelined: ioredis then
 * builds a pipeline object for each batch and sends it a turn later (setImmediate), and since each
 * request arrives in a turn of its own, a batch was most often one command. Without it the web
 * spent 128 against 141 µs of CPU on a GET /v1/account under 50 connections (docs/benchmarks.md).
 */
export function createRequestRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    enableAutoPipelining: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    lazyConnect: false,
    ...options,
  });
}

/** A connection for BullMQ, which needs blocking commands that wait as long as they must. */
export function createQueueRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    ...options,
  });
}

/** Resolves once the connection is ready, or rejects after the timeout. */
export async function waitForRedis(redis: Redis, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis not ready after ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}
