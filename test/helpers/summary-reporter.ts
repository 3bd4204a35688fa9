// A third reporter for `npm test` (scripts/test.ts): one JSON line for each test file run, with
// how long it took and its counts, for the run's totals and its slowest files.
import type { TestEvent } from 'node:test/reporters';

export default async function* summaries(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== 'test:summary' || !event.data.file) continue;
    const { file, duration_ms: ms, counts } = event.data;
    yield `${JSON.stringify({ file, ms, counts })}\n`;
  }
}
