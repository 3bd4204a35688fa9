// Reads the Prometheus text format the API and the workers expose, for the suites and benchmarks
// that check the figures an operator would see.

export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseMetrics(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples of `name` whose labels include `labels`; undefined when there is none. */
export function metricValue(samples: MetricSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return matching.length ? matching.reduce((sum, s) => sum + s.value, 0) : undefined;
}
