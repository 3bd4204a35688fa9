// A sandbox's budget of something costly the host's egress process does for it (egress-resolver-main.ts,
// egress-broker.ts): a burst, then so many a second; past it the thing is refused.

/** Takes one from the budget, or answers false when it is spent. */
export function tokenBucket(burst: number, perSecond: number): () => boolean {
  let tokens = burst;
  let filled = Date.now();
  return () => {
    const now = Date.now();
    tokens = Math.min(burst, tokens + ((now - filled) / 1000) * perSecond);
    filled = now;
    if (tokens < 1) return false;
    tokens--;
    return true;
  };
}
