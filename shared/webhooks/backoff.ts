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
