// A second reporter for `npm test` (scripts/test.ts): only the failures, each with where it is and
// the start of its error. The spec reporter prints its own list of failures at the end of a run,
// but a whole run is thousands of lines, and a log that keeps only its tail loses the earlier
// runs' lists; scripts/test.ts prints these files again once every run has ended.
import type { TestEvent } from 'node:test/reporters';

/** Enough of an error to name what went wrong, not a whole dump of the objects compared. */
const ERROR_CHARS = 1500;

function describe(error: unknown): string {
  const inner = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const whole = inner instanceof Error ? (inner.stack ?? `${inner.name}: ${inner.message}`) : String(inner);
  // The test runner's own frames say nothing about the failure.
  const text = whole.split('\n').filter((line) => !/^\s+at .*\((node:internal|node:async_hooks)/.test(line)).join('\n');
  return text.length > ERROR_CHARS ? `${text.slice(0, ERROR_CHARS)}…` : text;
}

export default async function* failures(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, line, details } = event.data;
    const where = file ? `${file}${line ? `:${line}` : ''}` : '(no file)';
    const error = describe(details.error).replaceAll('\n', '\n    ');
    yield `✖ ${name}\n  at ${where}\n    ${error}\n`;
  }
}
