import { createHash } from 'node:crypto';

/**
 * The delay before attempt `attempt + 1`, after `attempt` failed ones: exponential from `baseMs`,
 * capped at `maxMs`, with "equal jitter" (half fixed, half random), so that the retries of many
 * deliveries that failed together spread out. The randomness is drawn from the delivery's key, so
 * the delay logged as "next retry" is the one used.
 */
export function retryDelayMs(key: string, attempt: number, baseMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 40));
  const unit = createHash('sha256').update(`${key}:${attempt}`).digest().readUInt32BE(0) / 0x1_0000_0000;
  return Math.round(ceiling / 2 + (ceiling / 2) * unit);
}

/** The longest a delivery waits before looking again at an earlier one of its sandbox that is overdue. */
export const ORDER_RECHECK_MAX_MS = 5000;

/**
 * How long a delivery waits behind an earlier delivery of the same sandbox to the same endpoint,
 * which was due at `dueAt` (its retry time, or its creation for a first try). Due later: until
 * then. Overdue: it is being sent right now (a moment ago), or its job is late or lost and the
 * events sweep will queue it again (minutes). So the wait grows with the lateness, from 50 ms to
 * ORDER_RECHECK_MAX_MS: a delivery held up behind a lost one looks again every few seconds, not
 * twenty times a second for as long as the sweep takes.
 */
export function orderWaitMs(dueAt: Date, now: number): number {
  const until = dueAt.getTime() - now;
  if (until >= 0) return until + 50;
  return Math.min(ORDER_RECHECK_MAX_MS, Math.max(50, Math.round(-until / 4)));
}
