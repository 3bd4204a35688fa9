import type { Redis } from 'ioredis';

// One round trip, atomic: refill from the elapsed time (Redis's own clock, so replicas with
// skewed clocks agree), take one token if there is one, and report what is left.
const SCRIPT = `
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local state = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil then
  tokens = capacity
  ts = now
end
if now > ts then
  tokens = math.min(capacity, tokens + (now - ts) * per_ms)
  ts = now
end
local allowed = 0
local retry_ms = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  retry_ms = math.ceil((1 - tokens) / per_ms)
end
redis.call('HSET', key, 'tokens', tostring(tokens), 'ts', ts)
redis.call('PEXPIRE', key, math.ceil((capacity - tokens) / per_ms) + 1000)
return {allowed, math.floor(tokens), retry_ms}
`;

export interface BucketResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Whole seconds until a token is free; 0 when allowed. */
  retryAfterSeconds: number;
}

type WithTakeToken = Redis & {
  paddockTakeToken(key: string, capacity: number, perMs: number): Promise<[number, number, number]>;
};

export class TokenBuckets {
  private readonly redis: WithTakeToken;
  private readonly prefix: string;

  constructor(redis: Redis, prefix: string) {
    if (!('paddockTakeToken' in redis)) {
      redis.defineCommand('paddockTakeToken', { numberOfKeys: 1, lua: SCRIPT });
    }
    this.redis = redis as WithTakeToken;
    this.prefix = prefix;
  }

  /** Takes one token from bucket `name` of `subject`; `perMinute` is both capacity and refill rate. */
  async take(name: string, subject: string, perMinute: number): Promise<BucketResult> {
    const key = `${this.prefix}:rl:${name}:${subject}`;
    const [allowed, remaining, retryMs] = await this.redis.paddockTakeToken(key, perMinute, perMinute / 60_000);
    return {
      allowed: allowed === 1,
      limit: perMinute,
      remaining,
      retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil(retryMs / 1000)),
    };
  }
}
