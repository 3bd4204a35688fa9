import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

// The hottest reads (GET /v1/account, GET /v1/sandboxes/{id}) answered from Redis, shared by every
// replica, in front of PostgreSQL: a PostgreSQL round trip costs the web several times the CPU of
// a Redis one (docs/benchmarks.md, "Measurements behind the design").
//
// Each account has a generation: a random token, replaced after every commit that changes what
// those reads answer (a sandbox's birth and each of its transitions, its usage with them). A view
// is stored with the generation its reader saw BEFORE it read the database, and only while that
// is still the generation: a change committed while it read has replaced the token, so the view,
// maybe older than that change, is never stored under the new one, and a view stored before a
// change no longer matches after it. Tokens never repeat, so an expired or evicted generation
// only costs a miss. The views' own expiry bounds what no writer announces: an operator's UPDATE
// by hand, or a replacement lost with Redis (a writer that cannot reach Redis carries on).

/** Longer than any view lives (PADDOCK_READ_CACHE_SECONDS is at most an hour). */
const GENERATION_SECONDS = 2 * 3600;

// KEYS: the account's generation, the view. ARGV: the generation the reader saw ('' for none), a
// fresh token (taken when there was none), the view, its seconds.
const STORE_SCRIPT = `
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if current then return 0 end
  current = ARGV[2]
  redis.call('SET', KEYS[1], current, 'EX', ${GENERATION_SECONDS})
elseif current ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[2], current .. '\\n' .. ARGV[3], 'EX', ARGV[4])
return 1
`;

type WithStore = Redis & {
  paddockStoreView(generationKey: string, viewKey: string, seen: string, fresh: string, view: string, seconds: number): Promise<number>;
};

/** A view's text, or the generation to store one under once read from the database. */
export type ViewRead = { hit: string } | { seen: string };

const token = () => randomBytes(12).toString('base64url');

/** A view that is not JSON (written by something else under our prefix) is a miss, not a 500. */
function parsed<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

export class ReadViews {
  private readonly redis: WithStore;
  private readonly prefix: string;
  private readonly seconds: number;

  /** `seconds`: how long a view lives; 0 reads the database every time (and stores nothing). */
  constructor(redis: Redis, prefix: string, seconds: number) {
    if (!('paddockStoreView' in redis)) redis.defineCommand('paddockStoreView', { numberOfKeys: 2, lua: STORE_SCRIPT });
    this.redis = redis as WithStore;
    this.prefix = prefix;
    this.seconds = seconds;
  }

  /** Whether views are kept at all (PADDOCK_READ_CACHE_SECONDS above 0). */
  get enabled(): boolean {
    return this.seconds > 0;
  }

  /**
   * Where a view and its account's generation live, for a script that checks a view and acts on
   * it in one round trip: the view holds while the stored text begins with the generation and a
   * newline (the rest is the view's JSON).
   */
  keysOf(accountId: string, view: string): { generation: string; view: string } {
    return { generation: this.generationKey(accountId), view: this.viewKey(accountId, view) };
  }

  /** keysOf's keys, each as the text before the account's id and the text after it: for a script that learns the account itself. */
  keysAround(view: string): { generation: [string, string]; view: [string, string] } {
    return { generation: [`${this.prefix}:views:`, ':gen'], view: [`${this.prefix}:views:`, `:${view}`] };
  }

  private generationKey(accountId: string): string {
    const [before, after] = this.keysAround('').generation;
    return before + accountId + after;
  }

  private viewKey(accountId: string, view: string): string {
    const [before, after] = this.keysAround(view).view;
    return before + accountId + after;
  }

  /**
   * The account's view `view` (a name the caller chose: 'account', 'sandbox:<id>'): from Redis when
   * it holds it at the account's generation, else `load`ed and stored when `keep` says so.
   * Undefined (nothing there) is never stored. With Redis away, the database answers.
   */
  async view<T>(accountId: string, view: string, load: () => Promise<T | undefined>, keep: (value: T) => boolean = () => true): Promise<T | undefined> {
    const read = await this.read(accountId, view).catch(() => undefined);
    if (read && 'hit' in read) {
      const hit = parsed<T>(read.hit);
      if (hit !== undefined) return hit;
    }
    const value = await load();
    if (value !== undefined && keep(value) && read && 'seen' in read) await this.store(accountId, view, read.seen, JSON.stringify(value)).catch(() => undefined);
    return value;
  }

  private async read(accountId: string, view: string): Promise<ViewRead | undefined> {
    if (this.seconds === 0) return undefined;
    const [generation, stored] = await this.redis.mget(this.generationKey(accountId), this.viewKey(accountId, view));
    return this.readOf(generation ?? null, stored ?? null);
  }

  /** What the values of keysOf's two keys, read together by a script of the caller's, say: the view, or the generation seen. */
  readOf(generation: string | null, stored: string | null): ViewRead | undefined {
    if (this.seconds === 0) return undefined;
    if (generation && stored?.startsWith(`${generation}\n`)) return { hit: stored.slice(generation.length + 1) };
    return { seen: generation ?? '' };
  }

  /** Stores a view read from the database after `read` answered `seen`; dropped when a change came between. */
  async store(accountId: string, view: string, seen: string, text: string): Promise<void> {
    await this.redis.paddockStoreView(this.generationKey(accountId), this.viewKey(accountId, view), seen, token(), text, this.seconds);
  }

  /** After a commit that changed what the accounts' views answer: every view of theirs is stale. */
  async changed(accountIds: Iterable<string>): Promise<void> {
    const ids = [...new Set(accountIds)];
    await Promise.all(ids.map((id) => this.redis.set(this.generationKey(id), token(), 'EX', GENERATION_SECONDS)));
  }
}
