import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';
import { envOf, exited, startRole } from '../helpers/processes.ts';
import { makeCertificate, startReceiver, testNetwork, verifyStandardWebhook } from '../helpers/webhooks.ts';

// test-plan: once (deliveries never reach the sandbox runtime the stack starts)
// At least once: a worker process killed (SIGKILL) while a receiver holds its delivery. The job's
// lock lapses, another worker takes it over and sends the event again, with the same webhook-id
// (the receiver's key to deduplicate) and a valid signature; the delivery ends delivered.

test('a worker killed with SIGKILL during a delivery: the event is delivered again by another worker, same webhook-id', async () => {
  const cert = makeCertificate(['hold.test']);
  let requests = 0;
  const receiver = await startReceiver(cert, () => (++requests === 1 ? { hang: true } : { status: 200 }));
  const net = testNetwork(cert.cert);
  net.host(['hold.test'], '203.0.113.100', receiver);
  // No in-process worker at first: the delivery can only go to the real worker process.
  const stack = await startSandboxStack({ workers: 0, webhookTransport: net.transport, overrides: { PADDOCK_JOB_LOCK_SECONDS: '2', PADDOCK_WEBHOOK_TIMEOUT_SECONDS: '10' } });
  const proc = startRole('test/webhooks/worker-process.ts', {
    ...envOf(stack.config, stack.kubeConfig),
    PADDOCK_LOG_LEVEL: 'info',
    TEST_WEBHOOK_NETWORK: JSON.stringify({ ca: cert.cert, hosts: { 'hold.test': receiver.port } }),
  });
  try {
    await eventually('the worker process started', 20_000, async () => (proc.output().includes('worker started') ? true : undefined), 25);
    const acct = await newAccount(stack.url, 'sigkill');
    const hook = (await call(stack.url, 'POST', '/v1/webhooks', { token: acct.key, body: { url: 'https://hold.test/' } })).body;
    const sent = await call(stack.url, 'POST', `/v1/webhooks/${hook.id}/test`, { token: acct.key });
    assert.equal(sent.status, 202);
    await eventually('the held request', 20_000, async () => (receiver.received.length === 1 ? true : undefined), 10);
    proc.kill('SIGKILL');
    assert.equal((await exited(proc)).signal, 'SIGKILL');
    assert.equal(receiver.received.length, 1);

    await stack.addWorker({ reaper: false });
    await eventually('sent again and answered', 30_000, async () => {
      const log = (await call(stack.url, 'GET', `/v1/webhooks/${hook.id}/deliveries`, { token: acct.key })).body.data as any[];
      return log.some((d) => d.statusCode === 200) ? true : undefined;
    });
    assert.equal(receiver.received.length, 2);
    const [first, second] = receiver.received;
    assert.equal(first!.headers['webhook-id'], sent.body.id);
    assert.equal(second!.headers['webhook-id'], sent.body.id);
    assert.equal(second!.body, first!.body);
    assert.ok(verifyStandardWebhook(hook.secret, second!.headers, second!.body));
    await sleep(500);
    assert.equal(receiver.received.length, 2, 'delivered, not sent a third time');
  } finally {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  }
});
