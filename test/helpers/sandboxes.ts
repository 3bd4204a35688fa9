import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { call } from './http.ts';

/** Polls GET /v1/sandboxes/{id} until `done` holds, failing after `timeoutMs`. */
export async function waitForSandbox(
  baseUrl: string,
  key: string,
  id: string,
  done: (sandbox: any) => boolean,
  timeoutMs = 30_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < deadline) {
    const res = await call(baseUrl, 'GET', `/v1/sandboxes/${id}`, { token: key });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    last = res.body;
    if (done(last)) return last;
    await sleep(50);
  }
  assert.fail(`sandbox ${id} did not reach the expected state in ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

export async function createSandbox(baseUrl: string, key: string, query = '', body: unknown = {}) {
  return call(baseUrl, 'POST', `/v1/sandboxes${query}`, { token: key, body });
}
