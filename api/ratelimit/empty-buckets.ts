// An attacker's loop is refused thousands of times in ten seconds (bench/abuse.ts), and each
// refusal cost a Redis round trip to learn again what the last one said: the account's bucket
// has no token until its next refill. A bucket's tokens only ever come from time, whichever
// replica takes them, so "empty until T" stays true on every replica until T: remembering it here
// keeps nothing another replica needs, and a refusal inside the window costs no round trip.

/** Refusals remembered at most: past this, expired ones are swept, then new ones not remembered. */
const MAX_ENTRIES = 10_000;

export class EmptyBuckets<T> {
  private readonly entries = new Map<string, { until: number; value: T }>();

  /** What was remembered with `key` and the milliseconds left until its bucket's next token, while there are some. */
  get(key: string, now = performance.now()): { value: T; retryMs: number } | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return { value: entry.value, retryMs: entry.until - now };
  }

  /**
   * Remembers that `key`'s bucket has no token for `retryMs` counted from `askedAt`: when the
   * request left, before Redis's clock read the bucket, so the window ends no later than the
   * bucket's own.
   */
  remember(key: string, value: T, askedAt: number, retryMs: number): void {
    const until = askedAt + retryMs;
    const now = performance.now();
    if (until <= now) return;
    if (this.entries.size >= MAX_ENTRIES) {
      for (const [k, entry] of this.entries) if (entry.until <= now) this.entries.delete(k);
      if (this.entries.size >= MAX_ENTRIES) return;
    }
    this.entries.set(key, { until, value });
  }

  forget(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }
}
