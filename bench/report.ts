import { writeFileSync } from 'node:fs';
import type { Machine } from './machine.ts';
import type { LoadSettings } from './load.ts';
import type { BenchRow } from './types.ts';

export interface BenchResults {
  date: string;
  machine: Machine;
  load: LoadSettings;
  /** 1-minute load average at the start and end: above the core count, other work competed. */
  loadAverage: { start: number; end?: number };
  benchmarks: { name: string; summary: string; rows: BenchRow[] }[];
  warnings: string[];
}

/** Markdown, so a run's output can be pasted into docs/benchmarks.md as it is. */
export function markdownTable(rows: BenchRow[]): string {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r.figures)))];
  const withGoal = rows.some((r) => r.goal);
  const header = ['', ...columns, ...(withGoal ? ['goal'] : [])];
  const lines = rows.map((r) => [
    r.subject,
    ...columns.map((c) => String(r.figures[c] ?? '')),
    ...(withGoal ? [r.goal ? `${r.goal.met ? 'met' : 'MISSED'} (${r.goal.text})` : ''] : []),
  ]);
  const numeric = columns.map((c) => rows.every((r) => typeof (r.figures[c] ?? 0) === 'number'));
  const align = ['---', ...numeric.map((n) => (n ? '---:' : '---')), ...(withGoal ? ['---'] : [])];
  return [header, align, ...lines].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

export function machineLine(m: Machine): string {
  return `${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}, PostgreSQL ${m.postgres}, Redis ${m.redis}`;
}

export function summary(results: BenchResults): string {
  const { start, end } = results.loadAverage;
  const out = [
    `\n# Paddock benchmarks, ${results.date}`,
    `machine: ${machineLine(results.machine)}`,
    `load average (1 min) at start ${start.toFixed(1)}, at end ${end?.toFixed(1) ?? '?'}`,
  ];
  for (const b of results.benchmarks) {
    out.push(`\n## ${b.name}: ${b.summary}\n`);
    const tables = [...new Set(b.rows.map((r) => r.table))];
    for (const table of tables) {
      if (table) out.push(`\n### ${table}\n`);
      out.push(markdownTable(b.rows.filter((r) => r.table === table)));
    }
  }
  return `${out.join('\n')}\n`;
}

export function writeResults(file: string, results: BenchResults): void {
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}
