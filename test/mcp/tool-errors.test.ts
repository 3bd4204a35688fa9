import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PaddockApiError } from '../../shared/sdk/index.ts';
import { toolError } from '../../shared/mcp/tools.ts';

// What a tool's failure tells the model: the API's code and detail, when to retry, and for a
// fault of the service's the request id its detail asks to quote.

const textOf = (r: ReturnType<typeof toolError>) => (r.content as { text: string }[]).map((c) => c.text).join('\n');

test("a 5xx's tool error carries its request id; a client error's does not need one", () => {
  const fault = toolError(new PaddockApiError({ status: 500, code: 'internal_error', detail: 'An unexpected error occurred; quote the request id when reporting it.', requestId: 'req_abc123' }));
  assert.equal(fault.isError, true);
  assert.match(textOf(fault), /internal_error/);
  assert.match(textOf(fault), /Request id: req_abc123\./);
  const limited = toolError(new PaddockApiError({ status: 429, code: 'rate_limited', detail: 'Too many requests.', requestId: 'req_def456', retryAfter: 3 }));
  assert.match(textOf(limited), /Retry after 3 s\./);
  assert.doesNotMatch(textOf(limited), /req_def456/);
});
