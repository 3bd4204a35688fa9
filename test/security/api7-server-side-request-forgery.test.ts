import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { allRoutes } from '../../api/routes/index.ts';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { routeKey } from './fixtures.ts';

// OWASP API7:2023 Server Side Request Forgery. No route fetches a URL a client gives, but one:
// POST /v1/webhooks takes the URL that events are delivered to, under the policy that
// test/webhooks/delivery.test.ts proves (https only, never a loopback, private, link-local or
// metadata address, checked on the address connected to; no redirect followed). The other
// input that makes the platform reach out is a sandbox's image (a registry pull, on Kubernetes):
// only the operator's default and the images PADDOCK_KUBE_ALLOWED_IMAGES lists may be asked for,
// and that is checked before anything is created. What a sandbox itself may reach is the
// isolation suite's (test/security/sandbox-isolation.test.ts: no network by default).

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '20' } });
const account = await newAccount(stack.url, 'api7');

// The one route that takes a URL, on purpose (the webhook delivery policy guards it).
const TAKES_A_URL = new Set(['POST /v1/webhooks']);

test('no route takes a URL but the webhook endpoint: no other input is named or documented as one', () => {
  const urlish = /url|uri|href|callback|webhook|endpoint|host|registry/i;
  assert.ok(allRoutes.some((r) => TAKES_A_URL.has(routeKey(r))));
  for (const route of allRoutes.filter((r) => !TAKES_A_URL.has(routeKey(r)))) {
    for (const schema of [route.spec.body, route.spec.query, route.spec.params]) {
      if (!schema) continue;
      const text = JSON.stringify(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }));
      const names = Object.keys((JSON.parse(text) as { properties?: object }).properties ?? {});
      // An id of a webhook (webhookId) names no address.
      for (const name of names.filter((n) => !/Id$/.test(n))) assert.doesNotMatch(name, urlish, `${routeKey(route)}: ${name}`);
      assert.doesNotMatch(text, /"format":"(uri|url)"/, `${routeKey(route)} takes a URL`);
    }
  }
});

test('an image outside the allowed list is refused before anything is created, whatever registry it names', async () => {
  const images = [
    'localhost:5000/x:1',
    '127.0.0.1:6379/redis',
    '169.254.169.254/latest/meta-data',
    '[::1]:5000/x',
    'metadata.google.internal/computeMetadata',
    'registry.internal.example/secret-app:latest',
    'docker.io/library/debian:bookworm-slim@sha256:0000000000000000000000000000000000000000000000000000000000000000',
    'docker.io/library/python:3.12-slim-evil',
    'DOCKER.IO/library/python:3.12-slim',
  ];
  for (const image of images) {
    const res = await call(stack.url, 'POST', '/v1/sandboxes', { token: account.key, body: { image } });
    assert.ok(res.status === 422 || res.status === 400, `${image}: ${res.status}`);
    // The local runtime pulls nothing and runs no image but the host's: every one is unsupported there.
    if (res.status === 422) assertProblem(res, 422, testRuntime() === 'local' ? 'image_not_supported' : 'image_not_allowed');
  }
  const all = await call(stack.url, 'GET', '/v1/sandboxes?state=all', { token: account.key });
  assert.deepEqual(all.body.data, []);
  // The operator's list itself works (locally, the one image there is).
  const image = testRuntime() === 'local' ? 'host' : 'docker.io/library/python:3.12-slim';
  const allowed = await call(stack.url, 'POST', '/v1/sandboxes?wait=false', { token: account.key, body: { image } });
  assert.equal(allowed.status, 201, JSON.stringify(allowed.body));
});
