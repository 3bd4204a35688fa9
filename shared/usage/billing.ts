// The one billing rule: wall-clock sandbox time from when a sandbox became ready (one that never
// ran bills nothing) to when it was destroyed, or to now while it runs, counted per UTC calendar
// month (a sandbox that spans two months counts in each only for its part).
//
// A destroyed sandbox's time is added to usage_rollups, per account and month, in the transaction
// that destroys it; what is still running is summed from the account's active sandboxes (at most
// its concurrent cap). So the usage of an account costs the same with 100,000 sandboxes behind it
// as with none.

// The rule's SQL is the usage repository's (shared/repositories/usage.ts).

/**
 * The parts of an account's usage in a month, as read at one moment: what its destroyed sandboxes
 * rolled up, and when each of its active ones became ready (epoch ms; a pending one has none yet).
 */
export interface UsageParts {
  /** The month's first instant, epoch ms. */
  periodStart: number;
  rolledSeconds: number;
  /** Its active sandboxes, pending ones included. */
  active: number;
  runningSince: number[];
}

/** secondsUsedSql's sum, taken at `now` (epoch ms): the parts stay right while no sandbox changes. */
export function secondsUsedAt(parts: UsageParts, now: number): number {
  let seconds = parts.rolledSeconds;
  for (const readyAt of parts.runningSince) seconds += (now - Math.max(readyAt, parts.periodStart)) / 1000;
  return seconds;
}
