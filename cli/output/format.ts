/** Plain-text helpers for results on stdout. */

/** Columns padded to their widest cell; the last column is not padded. */
export function table(headers: string[], rows: string[][]): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** 45s, 12m, 1h05m, 3d4h: a duration in the two biggest units that matter. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${h % 24}h`;
}

/** mm:ss (or h:mm:ss) to a moment; 00:00 once it has passed. */
export function countdown(untilMs: number, nowMs: number): string {
  const s = Math.max(0, Math.floor((untilMs - nowMs) / 1000));
  const h = Math.floor(s / 3600);
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${mm}:${ss}` : `${mm}:${ss}`;
}

/** A number with at most two decimals: 0.25, 1.5, 20. */
export function decimal(n: number): string {
  return String(Math.round(n * 100) / 100);
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${decimal(n / 1024)} KiB`;
  return `${decimal(n / (1024 * 1024))} MiB`;
}

export function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}
