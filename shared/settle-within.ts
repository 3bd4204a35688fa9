import type { Redis } from 'ioredis';

/**
 * Best-effort Redis work beside PostgreSQL's record: started only while `redis` is connected, and
 * waited for at most `ms`, its failure ignored; answers whether it finished in time. BullMQ waits
 * without limit for a Redis that this process has never reached, and with Redis away each wait
 * would hold up what the record has already done (a destroy, the reaper's sweep) for nothing.
 */
export async function settleWithin(redis: Redis, work: () => Promise<unknown>, ms: number): Promise<boolean> {
  if (redis.status !== 'ready') return false;
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    work().then(
      () => true,
      () => false,
    ),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return done;
}
