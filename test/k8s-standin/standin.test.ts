import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { ApiException, CoreV1Api, Exec, Watch, type V1Pod, type V1Status } from '@kubernetes/client-node';
import WebSocket from 'ws';
import { newId } from '../../shared/ids.ts';
import { startStandinFixture, type StandinFixture } from './fixture.ts';

// The stand-in on its own: does it answer as the Kubernetes API does, through the real client
// library and through raw HTTP and WebSocket, with real local sandboxes behind its pods?

const NS = 'standin-test';
let fixture: StandinFixture;
let core: CoreV1Api;

before(async () => {
  fixture = await startStandinFixture({ pullBackOffMs: 200 });
  core = fixture.standin.kubeConfig.makeApiClient(CoreV1Api);
});
after(() => fixture?.close());

const podName = () => newId('sbx').replace('_', '-');

function podBody(name: string, extra: { image?: string; labels?: Record<string, string>; deadline?: number } = {}): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: 'standin-test', ...extra.labels } },
    spec: {
      restartPolicy: 'Never',
      ...(extra.deadline ? { activeDeadlineSeconds: extra.deadline } : {}),
      containers: [{ name: 'main', image: extra.image ?? 'docker.io/library/debian:bookworm-slim', command: ['sleep', '3600'] }],
    },
  };
}

async function raw(method: string, path: string, options: { body?: unknown; token?: string | null } = {}) {
  const token = options.token === undefined ? fixture.standin.token : options.token;
  const res = await fetch(`${fixture.standin.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(options.body ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body ? { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const running = (name: string) =>
  until(`${name} to run`, async () => {
    const pod = await core.readNamespacedPod({ name, namespace: NS });
    return pod.status?.phase === 'Running' ? pod : undefined;
  });

const backendIdOf = (pod: V1Pod) => pod.status?.containerStatuses?.[0]?.containerID?.replace('standin://', '') ?? '';

describe('REST', () => {
  test('refuses a request without the bearer token with an Unauthorized Status', async () => {
    for (const token of [null, 'wrong-token']) {
      const res = await raw('GET', `/api/v1/namespaces/${NS}/pods`, { token });
      assert.equal(res.status, 401);
      assert.deepEqual(res.body, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Unauthorized',
        reason: 'Unauthorized',
        code: 401,
      });
    }
  });

  test('create answers the stored pod, Pending, and a real sandbox then makes it Running and ready', async () => {
    const name = podName();
    const created = await core.createNamespacedPod({ namespace: NS, body: podBody(name) });
    assert.equal(created.metadata?.name, name);
    assert.equal(created.metadata?.namespace, NS);
    assert.match(created.metadata?.uid ?? '', /^[0-9a-f-]{36}$/);
    assert.match(created.metadata?.resourceVersion ?? '', /^[0-9]+$/);
    assert.ok(created.metadata?.creationTimestamp instanceof Date);
    assert.equal(created.status?.phase, 'Pending');

    const pod = await running(name);
    const status = pod.status?.containerStatuses?.[0];
    assert.equal(status?.ready, true);
    assert.ok(status?.state?.running?.startedAt);
    assert.ok(Number(pod.metadata?.resourceVersion) > Number(created.metadata?.resourceVersion));
    const backendId = backendIdOf(pod);
    assert.equal((await fixture.backend.get(backendId))?.status, 'running');
    await core.deleteNamespacedPod({ name, namespace: NS });
  });

  test('a second create of the same name is 409 AlreadyExists', async () => {
    const name = podName();
    await core.createNamespacedPod({ namespace: NS, body: podBody(name) });
    await assert.rejects(core.createNamespacedPod({ namespace: NS, body: podBody(name) }), (err: unknown) => {
      assert.ok(err instanceof ApiException);
      assert.equal(err.code, 409);
      return true;
    });
    const res = await raw('POST', `/api/v1/namespaces/${NS}/pods`, { body: podBody(name) });
    assert.equal(res.status, 409);
    assert.deepEqual(res.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `pods "${name}" already exists`,
      reason: 'AlreadyExists',
      details: { name, kind: 'pods' },
      code: 409,
    });
    await core.deleteNamespacedPod({ name, namespace: NS });
  });

  test('get and delete of a missing pod are 404 NotFound', async () => {
    const name = podName();
    for (const method of ['GET', 'DELETE']) {
      const res = await raw(method, `/api/v1/namespaces/${NS}/pods/${name}`);
      assert.equal(res.status, 404, method);
      assert.equal(res.body.kind, 'Status');
      assert.equal(res.body.reason, 'NotFound');
      assert.equal(res.body.message, `pods "${name}" not found`);
      assert.equal(res.body.code, 404);
    }
    await assert.rejects(core.readNamespacedPod({ name, namespace: NS }), (err: unknown) => err instanceof ApiException && err.code === 404);
  });

  test('an invalid pod is 422 Invalid, one cause per field, and nothing is stored', async () => {
    const bad = podBody('sbx_underscore', { labels: { 'paddock.dev/x': 'no spaces allowed' } });
    bad.spec!.containers.push({ name: 'second', image: '' });
    const res = await raw('POST', `/api/v1/namespaces/${NS}/pods`, { body: bad });
    assert.equal(res.status, 422);
    assert.equal(res.body.reason, 'Invalid');
    const fields = (res.body.details as { causes: { field: string }[] }).causes.map((c) => c.field);
    assert.deepEqual(fields.sort(), ['metadata.labels["paddock.dev/x"]', 'metadata.name', 'spec.containers[1].image']);
    assert.equal((await raw('GET', `/api/v1/namespaces/${NS}/pods/sbx_underscore`)).status, 404);

    const noContainers = await raw('POST', `/api/v1/namespaces/${NS}/pods`, { body: { metadata: { name: podName() }, spec: { containers: [] } } });
    assert.equal(noContainers.status, 422);
    const otherNamespace = podBody(podName());
    otherNamespace.metadata!.namespace = 'elsewhere';
    assert.equal((await raw('POST', `/api/v1/namespaces/${NS}/pods`, { body: otherNamespace })).status, 400);
    assert.equal((await raw('POST', `/api/v1/namespaces/${NS}/pods`, { body: '{not json' })).status, 400);
  });

  test('lists by equality label selectors, comma-separated, and pages with limit and continue', async () => {
    const run = newId('sbx');
    const names = [podName(), podName(), podName()].sort();
    for (const [i, name] of names.entries()) {
      await core.createNamespacedPod({ namespace: NS, body: podBody(name, { labels: { run, tier: i === 0 ? 'a' : 'b' } }) });
    }
    const list = await core.listNamespacedPod({ namespace: NS, labelSelector: `run=${run}` });
    assert.deepEqual(list.items.map((p) => p.metadata?.name), names);
    assert.match(list.metadata?.resourceVersion ?? '', /^[0-9]+$/);
    const b = await core.listNamespacedPod({ namespace: NS, labelSelector: `run=${run},tier=b` });
    assert.deepEqual(b.items.map((p) => p.metadata?.name), names.slice(1));
    const notB = await core.listNamespacedPod({ namespace: NS, labelSelector: `run==${run},tier!=b` });
    assert.deepEqual(notB.items.map((p) => p.metadata?.name), names.slice(0, 1));
    assert.deepEqual((await core.listNamespacedPod({ namespace: 'another', labelSelector: `run=${run}` })).items, []);

    const first = await core.listNamespacedPod({ namespace: NS, labelSelector: `run=${run}`, limit: 2 });
    assert.equal(first.items.length, 2);
    assert.ok(first.metadata?._continue);
    const rest = await core.listNamespacedPod({ namespace: NS, labelSelector: `run=${run}`, limit: 2, _continue: first.metadata._continue });
    assert.deepEqual([...first.items, ...rest.items].map((p) => p.metadata?.name), names);
    assert.equal(rest.metadata?._continue, undefined);

    const setBased = await raw('GET', `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent('tier in (a,b)')}`);
    assert.equal(setBased.status, 400);
    for (const name of names) await core.deleteNamespacedPod({ name, namespace: NS });
  });

  test('delete answers the pod with a deletionTimestamp; it goes once its sandbox is destroyed', async () => {
    const name = podName();
    await core.createNamespacedPod({ namespace: NS, body: podBody(name) });
    const backendId = backendIdOf(await running(name));
    const deleted = await core.deleteNamespacedPod({ name, namespace: NS, gracePeriodSeconds: 1 });
    assert.equal(deleted.metadata?.name, name);
    assert.ok(deleted.metadata?.deletionTimestamp instanceof Date);
    assert.equal(deleted.metadata?.deletionGracePeriodSeconds, 1);
    await until('the pod to go', async () => ((await raw('GET', `/api/v1/namespaces/${NS}/pods/${name}`)).status === 404 ? true : undefined));
    assert.ok(fixture.backend.destroyed.includes(backendId));
    assert.equal(await fixture.backend.get(backendId), undefined);
  });

  test('an unpullable image leaves the pod Pending: ErrImagePull, then ImagePullBackOff, and no sandbox', async () => {
    const name = podName();
    const image = 'registry.example/does-not-exist:1';
    const createdBefore = fixture.backend.created.length;
    await core.createNamespacedPod({ namespace: NS, body: podBody(name, { image }) });
    const waitingReason = async () => (await core.readNamespacedPod({ name, namespace: NS })).status?.containerStatuses?.[0]?.state?.waiting;
    assert.equal((await waitingReason())?.reason, 'ErrImagePull');
    const backOff = await until('ImagePullBackOff', async () => {
      const waiting = await waitingReason();
      return waiting?.reason === 'ImagePullBackOff' ? waiting : undefined;
    });
    assert.ok(backOff.message?.includes(image));
    assert.equal((await core.readNamespacedPod({ name, namespace: NS })).status?.phase, 'Pending');
    assert.equal(fixture.backend.created.length, createdBefore);
    await core.deleteNamespacedPod({ name, namespace: NS });
  });

  test('honours activeDeadlineSeconds: the pod fails with DeadlineExceeded and its sandbox is destroyed', async () => {
    const name = podName();
    await core.createNamespacedPod({ namespace: NS, body: podBody(name, { deadline: 1 }) });
    const backendId = backendIdOf(await running(name));
    const failed = await until('the deadline', async () => {
      const pod = await core.readNamespacedPod({ name, namespace: NS });
      return pod.status?.phase === 'Failed' ? pod : undefined;
    });
    assert.equal(failed.status?.reason, 'DeadlineExceeded');
    assert.equal(failed.status?.containerStatuses?.[0]?.ready, false);
    await until('the sandbox to be destroyed', async () => ((await fixture.backend.get(backendId)) === undefined ? true : undefined));
    await core.deleteNamespacedPod({ name, namespace: NS });
  });
});

describe('watch', () => {
  test('streams ADDED, MODIFIED and DELETED, and resumes from a resourceVersion', async () => {
    const name = podName();
    const events: { type: string; phase?: string; deleting: boolean; rv: string }[] = [];
    const watch = new Watch(fixture.standin.kubeConfig);
    const controller = await watch.watch(
      `/api/v1/namespaces/${NS}/pods`,
      { fieldSelector: `metadata.name=${name}` },
      (type: string, pod: V1Pod) =>
        events.push({ type, phase: pod.status?.phase, deleting: Boolean(pod.metadata?.deletionTimestamp), rv: pod.metadata?.resourceVersion ?? '' }),
      () => undefined,
    );
    await core.createNamespacedPod({ namespace: NS, body: podBody(name) });
    await running(name);
    await core.deleteNamespacedPod({ name, namespace: NS });
    await until('DELETED', async () => (events.some((e) => e.type === 'DELETED') ? true : undefined));
    controller.abort();

    assert.equal(events[0]?.type, 'ADDED');
    assert.equal(events[0]?.phase, 'Pending');
    assert.ok(events.some((e) => e.type === 'MODIFIED' && e.phase === 'Running'));
    assert.ok(events.some((e) => e.type === 'MODIFIED' && e.deleting));
    assert.equal(events.at(-1)?.type, 'DELETED');

    // From the first event's version, the rest is replayed in order.
    const replayed: string[] = [];
    const again = await watch.watch(
      `/api/v1/namespaces/${NS}/pods`,
      { fieldSelector: `metadata.name=${name}`, resourceVersion: events[0]!.rv },
      (type: string) => replayed.push(type),
      () => undefined,
    );
    await until('the replay', async () => (replayed.length >= events.length - 1 ? true : undefined));
    again.abort();
    assert.deepEqual(replayed, events.slice(1).map((e) => e.type));
  });

  test('without a resourceVersion it starts with the pods that exist', async () => {
    const name = podName();
    await core.createNamespacedPod({ namespace: NS, body: podBody(name) });
    const seen: string[] = [];
    const controller = await new Watch(fixture.standin.kubeConfig).watch(
      `/api/v1/namespaces/${NS}/pods`,
      { labelSelector: 'app=standin-test', fieldSelector: `metadata.name=${name}` },
      (type: string, pod: V1Pod) => seen.push(`${type} ${pod.metadata?.name}`),
      () => undefined,
    );
    await until('the synthetic ADDED', async () => (seen.length > 0 ? true : undefined));
    controller.abort();
    assert.equal(seen[0], `ADDED ${name}`);
    await core.deleteNamespacedPod({ name, namespace: NS });
  });

  test('a resourceVersion older than the event window gets a 410 Expired ERROR event', async () => {
    const small = await startStandinFixture({ eventWindow: 2 });
    try {
      const smallCore = small.standin.kubeConfig.makeApiClient(CoreV1Api);
      const names = [podName(), podName()];
      for (const name of names) await smallCore.createNamespacedPod({ namespace: NS, body: podBody(name, { image: 'x/does-not-exist' }) });
      const events: { type: string; object: { code?: number; reason?: string } }[] = [];
      let ended = false;
      await new Watch(small.standin.kubeConfig).watch(
        `/api/v1/namespaces/${NS}/pods`,
        { resourceVersion: '1' },
        (type: string, object: { code?: number; reason?: string }) => events.push({ type, object }),
        () => (ended = true),
      );
      await until('the watch to end', async () => (ended ? true : undefined));
      assert.equal(events.length, 1);
      assert.equal(events[0]?.type, 'ERROR');
      assert.equal(events[0]?.object.code, 410);
      assert.equal(events[0]?.object.reason, 'Expired');
    } finally {
      await small.close();
    }
  });
});

describe('exec', () => {
  const name = podName();
  before(async () => {
    await core.createNamespacedPod({ namespace: NS, body: podBody(name) });
    await running(name);
  });
  after(() => core.deleteNamespacedPod({ name, namespace: NS }));

  interface Collected {
    stdout: string;
    stderr: string;
    status: V1Status;
    protocol: string;
  }

  async function clientExec(command: string[], stdin?: string): Promise<Collected> {
    let stdout = '';
    let stderr = '';
    const sink = (append: (s: string) => void) =>
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          append(chunk.toString());
          callback();
        },
      });
    const { Readable } = await import('node:stream');
    let done: (status: V1Status) => void = () => undefined;
    const finished = new Promise<V1Status>((resolve) => (done = resolve));
    const ws = await new Exec(fixture.standin.kubeConfig).exec(
      NS,
      name,
      'main',
      command,
      sink((s) => (stdout += s)),
      sink((s) => (stderr += s)),
      stdin === undefined ? null : Readable.from([Buffer.from(stdin)]),
      false,
      done,
    );
    const status = await finished;
    return { stdout, stderr, status, protocol: ws.protocol };
  }

  test('client-node negotiates v5; stdout, stderr, stdin and the Success status come through', async () => {
    const result = await clientExec(['sh', '-c', 'printf "out:%s" "$(cat)"; printf err >&2'], 'from stdin');
    assert.equal(result.protocol, 'v5.channel.k8s.io');
    assert.equal(result.stdout, 'out:from stdin');
    assert.equal(result.stderr, 'err');
    assert.deepEqual(result.status, { metadata: {}, status: 'Success' });
  });

  test('a non-zero exit is a NonZeroExitCode Failure with the code as the ExitCode cause', async () => {
    const { status } = await clientExec(['sh', '-c', 'exit 42']);
    assert.equal(status.status, 'Failure');
    assert.equal(status.reason, 'NonZeroExitCode');
    assert.deepEqual(status.details?.causes, [{ reason: 'ExitCode', message: '42' }]);
  });

  interface Frame {
    channel: number;
    data: Buffer;
  }

  function rawExec(query: string, protocols: string[], send: (ws: WebSocket) => void = () => undefined) {
    const url = `${fixture.standin.url.replace('http', 'ws')}/api/v1/namespaces/${NS}/pods/${name}/exec?${query}`;
    const ws = new WebSocket(url, protocols, { headers: { authorization: `Bearer ${fixture.standin.token}` } });
    return new Promise<{ protocol: string; frames: Frame[]; closeCode: number }>((resolve, reject) => {
      const frames: Frame[] = [];
      ws.on('open', () => send(ws));
      ws.on('message', (data: Buffer) => frames.push({ channel: data[0]!, data: data.subarray(1) }));
      ws.on('close', (code) => resolve({ protocol: ws.protocol, frames, closeCode: code }));
      ws.on('error', reject);
    });
  }

  function rawRefusal(path: string, protocols: string[], token = fixture.standin.token) {
    const ws = new WebSocket(`${fixture.standin.url.replace('http', 'ws')}${path}`, protocols, {
      headers: { authorization: `Bearer ${token}` },
    });
    return new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      ws.on('unexpected-response', (_req, res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
      });
      ws.on('open', () => reject(new Error('the upgrade was accepted')));
      ws.on('error', () => undefined);
    });
  }

  test('v4, spoken with a raw WebSocket: channel-prefixed frames, then the status, then close', async () => {
    const query = 'command=sh&command=-c&command=printf%20hello%3B%20printf%20oops%20%3E%262%3B%20exit%203&stdout=true&stderr=true&container=main';
    const { protocol, frames, closeCode } = await rawExec(query, ['v4.channel.k8s.io']);
    assert.equal(protocol, 'v4.channel.k8s.io');
    assert.equal(closeCode, 1000);
    // The kubelet's "streams are up" frame: empty, on the lowest output channel.
    assert.deepEqual(frames[0], { channel: 1, data: Buffer.alloc(0) });
    const text = (channel: number) => Buffer.concat(frames.filter((f) => f.channel === channel).map((f) => f.data)).toString();
    assert.equal(text(1), 'hello');
    assert.equal(text(2), 'oops');
    const last = frames.at(-1)!;
    assert.equal(last.channel, 3);
    assert.deepEqual(JSON.parse(last.data.toString()), {
      metadata: {},
      status: 'Failure',
      message: 'command terminated with non-zero exit code: error executing command [sh -c printf hello; printf oops >&2; exit 3], exit code 3',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
  });

  test('v5 raw: stdin frames, then the CLOSE frame for stdin, reach the command', async () => {
    const query = 'command=wc&command=-c&stdin=true&stdout=true&container=main';
    const { protocol, frames } = await rawExec(query, ['v5.channel.k8s.io', 'v4.channel.k8s.io'], (ws) => {
      ws.send(Buffer.concat([Buffer.of(0), Buffer.from('12345')]));
      ws.send(Buffer.concat([Buffer.of(0), Buffer.from('678')]));
      ws.send(Buffer.of(255, 0));
    });
    assert.equal(protocol, 'v5.channel.k8s.io');
    const stdout = Buffer.concat(frames.filter((f) => f.channel === 1).map((f) => f.data)).toString();
    assert.equal(stdout.trim(), '8');
    assert.deepEqual(JSON.parse(frames.at(-1)!.data.toString()), { metadata: {}, status: 'Success' });
  });

  test('refuses the upgrade with a Status: missing pod, no command, no stream, no known subprotocol, bad token', async () => {
    const base = `/api/v1/namespaces/${NS}/pods`;
    const missing = await rawRefusal(`${base}/${podName()}/exec?command=true&stdout=true`, ['v5.channel.k8s.io']);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.reason, 'NotFound');
    const noCommand = await rawRefusal(`${base}/${name}/exec?stdout=true`, ['v5.channel.k8s.io']);
    assert.equal(noCommand.status, 400);
    assert.match(String(noCommand.body.message), /at least one command/);
    const noStream = await rawRefusal(`${base}/${name}/exec?command=true`, ['v5.channel.k8s.io']);
    assert.equal(noStream.status, 400);
    const oldProtocol = await rawRefusal(`${base}/${name}/exec?command=true&stdout=true`, ['channel.k8s.io']);
    assert.equal(oldProtocol.status, 400);
    const badContainer = await rawRefusal(`${base}/${name}/exec?command=true&stdout=true&container=nope`, ['v5.channel.k8s.io']);
    assert.equal(badContainer.status, 400);
    const badToken = await rawRefusal(`${base}/${name}/exec?command=true&stdout=true`, ['v5.channel.k8s.io'], 'wrong');
    assert.equal(badToken.status, 401);
    assert.equal(badToken.body.reason, 'Unauthorized');
  });

  test('refuses exec into a pod that is not running', async () => {
    const pending = podName();
    await core.createNamespacedPod({ namespace: NS, body: podBody(pending, { image: 'x/does-not-exist' }) });
    const res = await rawRefusal(`/api/v1/namespaces/${NS}/pods/${pending}/exec?command=true&stdout=true`, ['v5.channel.k8s.io']);
    assert.equal(res.status, 400);
    assert.equal(res.body.kind, 'Status');
    await core.deleteNamespacedPod({ name: pending, namespace: NS });
  });
});
