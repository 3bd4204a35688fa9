import type { Socket } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';

/**
 * A connection for request paths: when Redis is unreachable a command fails at once instead of
 * queueing, so the API can answer 503 quickly rather than hang. Commands issued within one turn of
 * the event loop go out in one write: a burst of requests costs one system call a turn, not one
 * each. That is done by corking the socket until the turn's end rather than by ioredis's
 * auto-pipelining, which builds a pipeline object for every batch (most often one request's one
 * command): the same batching, at less CPU a request (docs/benchmarks.md, "Measurements behind the design").
 */
export function createRequestRedis(url: string, options: RedisOptions = {}): Redis {
  const { commandTimeout = 2000, ...rest } = options;
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    lazyConnect: false,
    ...rest,
  });
  batchWritesPerTurn(redis, commandTimeout);
  return redis;
}

/**
 * Corks the socket for the turn, and times each command out after `timeoutMs`, judged after the
 * turn's reads: ioredis's own timeout fires in the timers phase, before the poll phase reads the
 * socket, so after an event loop held up past it (a large module loading, a loaded host) every
 * command in flight failed although its reply had arrived, and each request then answered 503.
 */
function batchWritesPerTurn(redis: Redis, timeoutMs: number): void {
  const send = redis.sendCommand.bind(redis);
  let corked: Socket | undefined;
  const uncork = () => {
    corked?.uncork();
    corked = undefined;
  };
  redis.sendCommand = (command, stream) => {
    const socket = (redis as unknown as { stream?: Socket }).stream;
    if (!corked && !stream && socket && redis.status === 'ready') {
      socket.cork();
      corked = socket;
      setImmediate(uncork);
    }
    const sent = send(command, stream);
    if (timeoutMs > 0 && !command.isResolved) {
      const timer = setTimeout(() => {
        setImmediate(() => {
          if (!command.isResolved) command.reject(new Error('Command timed out'));
        });
      }, timeoutMs);
      const clear = () => clearTimeout(timer);
      command.promise.then(clear, clear);
    }
    return sent;
  };
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
