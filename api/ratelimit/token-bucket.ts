import type { Redis } from 'ioredis';

// Refill from the elapsed time (Redis's own clock, so replicas with skewed clocks agree), take one
// token if there is one, and report what is left. A Lua function, so that the API key's lookup can
// take its route's token in the same round trip (api/auth/api-key-store.ts).
export const TAKE_TOKEN_LUA = `
local function take_token(key, capacity, per_ms)
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
end
`;

const SCRIPT = `${TAKE_TOKEN_LUA}
return take_token(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
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

  /** Where bucket `name` keeps its accounts (the account id follows): the key lookup's script takes from it. */
  accountKeyPrefix(name: string): string {
    return `${this.prefix}:rl:${name}:acct:`;
  }

  /** Takes one token from bucket `name` of `subject`; `perMinute` is both capacity and refill rate. */
  async take(name: string, subject: string, perMinute: number): Promise<BucketResult> {
    const key = `${this.prefix}:rl:${name}:${subject}`;
    return bucketResult(perMinute, await this.redis.paddockTakeToken(key, perMinute, perMinute / 60_000));
  }
}

/** What take_token answered, for a bucket of `perMinute`. */
export function bucketResult(perMinute: number, [allowed, remaining, retryMs]: readonly number[]): BucketResult {
  return {
    allowed: allowed === 1,
    limit: perMinute,
    remaining: remaining ?? 0,
    retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil((retryMs ?? 0) / 1000)),
  };
}
