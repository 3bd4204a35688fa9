import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../shared/errors.ts';

// A 4xx is built thousands of times a second for a flooding client (bench/refusals.ts): it skips
// the stack capture. A 5xx is a fault to find in the log: it keeps its stack.

function thrownFromDepth(depth: number, make: () => Error): Error {
  return depth === 0 ? make() : thrownFromDepth(depth - 1, make);
}

test("a client's error (4xx) carries no stack frames; a server's (5xx) keeps them; the process's limit is left as it was", () => {
  const limit = Error.stackTraceLimit;
  const refused = thrownFromDepth(5, () => new ApiError('rate_limited', 'slow down'));
  assert.equal(refused.stack, 'ApiError: slow down');
  const fault = thrownFromDepth(5, () => new ApiError('internal_error', 'broken'));
  assert.match(fault.stack ?? '', /^ApiError: broken\n\s+at /);
  assert.match(fault.stack ?? '', /thrownFromDepth/);
  assert.equal(Error.stackTraceLimit, limit);
  assert.ok((new Error('plain').stack ?? '').includes('\n    at '), 'other errors still capture their stacks');
});
