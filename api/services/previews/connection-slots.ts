import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

// The connections through one sandbox's previews, counted over every API process: a sorted set
// per sandbox in Redis, a member per open connection scored by when it lapses. A holder renews
// its members while they are open and removes them when they close; a process that dies leaves
// members that lapse within LEASE_MS. Nothing of it lives in one process's memory only.

const LEASE_MS = 60_000;
const RENEW_MS = 20_000;

// KEYS[1] the sandbox's set. ARGV: now, when the new member lapses, the member, the cap, the set's
// own expiry. Lapsed members go first; the new one is added only below the cap.
const TAKE_FUNCTION = `
local function take()
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return false end
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return true
end`;

const TAKE_SCRIPT = `${TAKE_FUNCTION}
if take() then return 1 end
return 0`;

// The same, once a read view (shared/cache/read-views.ts) says the request may pass: KEYS[2] the
// account's generation, KEYS[3] the view. Answers {1, the view's JSON} with the slot taken, {0}
// when all are taken, {-1} when the view does not hold (then nothing is taken).
const TAKE_VIEWED_SCRIPT = `${TAKE_FUNCTION}
local generation = redis.call('GET', KEYS[2])
if not generation then return {-1} end
local view = redis.call('GET', KEYS[3])
if not view or string.sub(view, 1, #generation + 1) ~= generation .. '\\n' then return {-1} end
if not take() then return {0} end
return {1, string.sub(view, #generation + 2)}`;

type SlotRedis = Redis & {
  paddockTakePreviewSlot(key: string, now: number, lapses: number, member: string, max: number, ttlMs: number): Promise<number>;
  paddockTakeViewedPreviewSlot(key: string, generation: string, view: string, now: number, lapses: number, member: string, max: number, ttlMs: number): Promise<[number, string?]>;
};

/** A slot taken on a view's word: the view's JSON with it; 'busy' when all are taken; undefined when the view does not hold. */
export type ViewedSlot = { release: () => void; view: string } | 'busy' | undefined;

export class ConnectionSlots {
  readonly #redis: SlotRedis;
  readonly #prefix: string;
  readonly #max: number;
  /** The members this process holds, by key. */
  readonly #held = new Map<string, Set<string>>();
  #renewer: NodeJS.Timeout | undefined;

  constructor(redis: Redis, prefix: string, max: number) {
    if (!('paddockTakePreviewSlot' in redis)) redis.defineCommand('paddockTakePreviewSlot', { numberOfKeys: 1, lua: TAKE_SCRIPT });
    if (!('paddockTakeViewedPreviewSlot' in redis)) redis.defineCommand('paddockTakeViewedPreviewSlot', { numberOfKeys: 3, lua: TAKE_VIEWED_SCRIPT });
    this.#redis = redis as SlotRedis;
    this.#prefix = prefix;
    this.#max = max;
  }

  /** A slot for one more connection to the sandbox's previews: its release, or undefined when all are taken. */
  async take(sandboxId: string): Promise<(() => void) | undefined> {
    const key = this.#key(sandboxId);
    const member = randomUUID();
    const now = Date.now();
    const taken = await this.#redis.paddockTakePreviewSlot(key, now, now + LEASE_MS, member, this.#max, LEASE_MS * 2);
    return taken === 1 ? this.#hold(key, member) : undefined;
  }

  /**
   * A slot, in the same round trip as the check of the read view that lets the request pass
   * (`keys`, from ReadViews.keysOf): nothing is taken unless the view holds at its account's
   * generation.
   */
  async takeViewed(sandboxId: string, keys: { generation: string; view: string }): Promise<ViewedSlot> {
    const key = this.#key(sandboxId);
    const member = randomUUID();
    const now = Date.now();
    const [taken, view] = await this.#redis.paddockTakeViewedPreviewSlot(key, keys.generation, keys.view, now, now + LEASE_MS, member, this.#max, LEASE_MS * 2);
    if (taken === 0) return 'busy';
    if (taken !== 1 || view === undefined) return undefined;
    return { release: this.#hold(key, member), view };
  }

  #key(sandboxId: string): string {
    return `${this.#prefix}:preview-connections:${sandboxId}`;
  }

  /** Keeps a member taken renewed until its release. */
  #hold(key: string, member: string): () => void {
    const members = this.#held.get(key) ?? new Set<string>();
    members.add(member);
    this.#held.set(key, members);
    this.#renewer ??= setInterval(() => void this.#renew(), RENEW_MS).unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      members.delete(member);
      if (!members.size) this.#held.delete(key);
      this.#redis.zrem(key, member).catch(() => undefined);
    };
  }

  async #renew(): Promise<void> {
    const lapses = Date.now() + LEASE_MS;
    const batch = this.#redis.pipeline();
    for (const [key, members] of this.#held) {
      for (const member of members) batch.zadd(key, 'XX', lapses, member);
      batch.pexpire(key, LEASE_MS * 2);
    }
    await batch.exec().catch(() => undefined);
  }

  close(): void {
    clearInterval(this.#renewer);
  }
}
