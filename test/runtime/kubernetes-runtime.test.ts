import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { CoreV1Api, Exec, KubeConfig, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { newId } from '../../shared/ids.ts';
import {
  createKubernetesRuntime,
  sandboxPodManifest,
  type KubernetesRuntimeOptions,
} from '../../shared/runtime/kubernetes/index.ts';
import { MarkerFilter, wrapperArgv } from '../../shared/runtime/kubernetes/exec-script.ts';
import {
  PermanentRuntimeError,
  SandboxGoneError,
  type ExecRequest,
  type ExecResult,
  type SandboxRuntime,
} from '../../shared/runtime/types.ts';
import { startStandinFixture, type StandinFixture } from '../k8s-standin/fixture.ts';

// Whether the process in the pid file $1 is gone, allowing it up to 3 s: SIGKILL is delivered to a
// whole group at once, but a loaded machine may take a moment to run each member's exit, and a
// killed process stays a zombie until its new parent reaps it.
const GONE_CHECK =
  'p=$(cat "$1"); i=0; while [ $i -lt 30 ]; do ' +
  'if ! kill -0 "$p" 2>/dev/null || grep -q "^[0-9]* (.*) Z" "/proc/$p/stat" 2>/dev/null; then echo gone; exit; fi; ' +
  'sleep 0.1; i=$((i + 1)); done; echo alive';

const NAMESPACE = 'paddock-test';
const DEFAULT_IMAGE = 'docker.io/library/debian:bookworm-slim';
const PYTHON = 'docker.io/library/python:3.12-slim';
const UNPULLABLE = 'registry.example/does-not-exist:1';

function runtimeOptions(overrides: Partial<KubernetesRuntimeOptions> = {}): KubernetesRuntimeOptions {
  return {
    // The manifest is pure: before the stand-in starts, any KubeConfig will do.
    kubeConfig: fixture?.standin.kubeConfig ?? new KubeConfig(),
    namespace: NAMESPACE,
    defaultImage: DEFAULT_IMAGE,
    allowedImages: [PYTHON, UNPULLABLE],
    resources: { cpuRequest: '250m', cpuLimit: '1', memoryRequest: '256Mi', memoryLimit: '1Gi' },
    deadlineGraceSeconds: 120,
    ...overrides,
  };
}

const spec = (overrides: { image?: string; capSeconds?: number } = {}) => ({
  id: newId('sbx'),
  accountId: newId('acct'),
  capSeconds: 1800,
  ...overrides,
});

let fixture: StandinFixture | undefined;

describe('sandboxPodManifest', () => {
  test('names the pod after the sandbox, labels it as Paddock’s and bounds its life', () => {
    const s = spec({ capSeconds: 600 });
    const pod = sandboxPodManifest(s, runtimeOptions({ deadlineGraceSeconds: 30 }));
    assert.equal(pod.metadata?.name, s.id.replace('_', '-'));
    assert.match(pod.metadata?.name ?? '', /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    assert.equal(pod.metadata?.namespace, NAMESPACE);
    assert.deepEqual(pod.metadata?.labels, {
      'app.kubernetes.io/managed-by': 'paddock',
      'paddock.dev/sandbox-id': s.id,
      'paddock.dev/account-id': s.accountId,
    });
    assert.equal(pod.spec?.activeDeadlineSeconds, 630);
    assert.equal(pod.spec?.restartPolicy, 'Never');
  });

  test('runs as an unprivileged user with no token, no service links and no capabilities', () => {
    const pod = sandboxPodManifest(spec(), runtimeOptions());
    const podSecurity = pod.spec?.securityContext;
    assert.equal(pod.spec?.automountServiceAccountToken, false);
    assert.equal(pod.spec?.enableServiceLinks, false);
    assert.equal(podSecurity?.runAsNonRoot, true);
    assert.equal(podSecurity?.runAsUser, 1000);
    assert.equal(podSecurity?.runAsGroup, 1000);
    assert.equal(podSecurity?.fsGroup, 1000);
    assert.deepEqual(podSecurity?.seccompProfile, { type: 'RuntimeDefault' });
    assert.equal(pod.spec?.hostNetwork ?? false, false);
    assert.equal(pod.spec?.hostPID ?? false, false);
    const containers = pod.spec?.containers ?? [];
    assert.equal(containers.length, 1);
    const security = containers[0]?.securityContext;
    assert.equal(security?.allowPrivilegeEscalation, false);
    assert.equal(security?.privileged, false);
    assert.deepEqual(security?.capabilities, { drop: ['ALL'] });
    assert.equal(security?.runAsNonRoot, true);
    assert.deepEqual(security?.seccompProfile, { type: 'RuntimeDefault' });
    assert.equal(security?.readOnlyRootFilesystem, true);
  });

  test('gives the sandbox an emptyDir workspace as its working directory, a writable /tmp and /dev/shm, and nothing else', () => {
    const pod = sandboxPodManifest(spec(), runtimeOptions());
    const container = pod.spec?.containers[0];
    assert.equal(container?.workingDir, '/workspace');
    const mounts = Object.fromEntries((container?.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
    const volumes = Object.fromEntries((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
    for (const [path, emptyDir] of [['/workspace', {}], ['/tmp', {}], ['/dev/shm', { medium: 'Memory' }]] as const) {
      const volume = volumes[mounts[path] ?? ''];
      assert.ok(volume, `a volume is mounted at ${path}`);
      assert.deepEqual(volume.emptyDir, emptyDir);
    }
    assert.deepEqual(Object.keys(mounts).sort(), ['/dev/shm', '/tmp', '/workspace'], 'nothing else is writable');
    assert.equal(container?.securityContext?.readOnlyRootFilesystem, true);
    // Only emptyDir volumes: nothing of the node is reachable.
    for (const volume of pod.spec?.volumes ?? []) assert.deepEqual(Object.keys(volume).sort(), ['emptyDir', 'name']);
  });

  test('takes resources from the options, and a runtime class only when one is configured', () => {
    const resources = { cpuRequest: '100m', cpuLimit: '2', memoryRequest: '128Mi', memoryLimit: '2Gi' };
    const plain = sandboxPodManifest(spec(), runtimeOptions({ resources }));
    assert.deepEqual(plain.spec?.containers[0]?.resources, {
      requests: { cpu: '100m', memory: '128Mi' },
      limits: { cpu: '2', memory: '2Gi' },
    });
    assert.equal(plain.spec?.runtimeClassName, undefined);
    const gvisor = sandboxPodManifest(spec(), runtimeOptions({ runtimeClassName: 'gvisor' }));
    assert.equal(gvisor.spec?.runtimeClassName, 'gvisor');
  });

  test('uses the requested image only when it is allowed', () => {
    assert.equal(sandboxPodManifest(spec(), runtimeOptions()).spec?.containers[0]?.image, DEFAULT_IMAGE);
    assert.equal(sandboxPodManifest(spec({ image: PYTHON }), runtimeOptions()).spec?.containers[0]?.image, PYTHON);
    assert.equal(
      sandboxPodManifest(spec({ image: 'quay.io/any/thing:1' }), runtimeOptions({ allowedImages: ['*'] })).spec?.containers[0]?.image,
      'quay.io/any/thing:1',
    );
    assert.throws(
      () => sandboxPodManifest(spec({ image: 'docker.io/library/alpine:3' }), runtimeOptions()),
      (err: Error) => err instanceof PermanentRuntimeError && err.message.includes('docker.io/library/alpine:3'),
    );
  });

  test('keeps the container alive with a shell that exits promptly on TERM', async () => {
    const command = sandboxPodManifest(spec(), runtimeOptions()).spec?.containers[0]?.command ?? [];
    assert.equal(command[0], '/bin/sh');
    const child = spawn(command[0], command.slice(1), { stdio: 'ignore' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(child.exitCode, null, 'still running after 300 ms');
    const started = Date.now();
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0);
    assert.ok(Date.now() - started < 2000, 'ends within two seconds of TERM');
  });
});

describe('the exec wrapper’s marker line', () => {
  const collect = () => {
    const targets: string[] = [];
    const out: Buffer[] = [];
    const filter = new MarkerFilter('tok', (t) => targets.push(t), (c) => out.push(Buffer.from(c)));
    return { filter, targets, text: () => Buffer.concat(out).toString() };
  };

  test('is taken off stderr even when it arrives a byte at a time', () => {
    const { filter, targets, text } = collect();
    for (const byte of Buffer.from('tok g4242\nreal error\n')) filter.push(Buffer.of(byte));
    filter.flush();
    assert.deepEqual(targets, ['-4242']);
    assert.equal(text(), 'real error\n');
  });

  test('names a bare pid when the pod had no setsid', () => {
    const { filter, targets, text } = collect();
    filter.push(Buffer.from('tok p17\n'));
    assert.deepEqual(targets, ['17']);
    assert.equal(text(), '');
  });

  test('lets through, untouched, whatever is not the marker', () => {
    for (const input of ['to', 'tok', 'tok g12', 'other\n', 'tok x1\nmore', 'tok g1 2\n']) {
      const { filter, targets, text } = collect();
      filter.push(Buffer.from(input));
      filter.flush();
      assert.deepEqual(targets, [], input);
      assert.equal(text(), input, input);
    }
  });
});

describe('the kubernetes runtime against the API stand-in', () => {
  let runtime: SandboxRuntime;
  let core: CoreV1Api;

  before(async () => {
    fixture = await startStandinFixture({ pullBackOffMs: 200 });
    runtime = createKubernetesRuntime(runtimeOptions());
    core = fixture.standin.kubeConfig.makeApiClient(CoreV1Api);
  });
  after(async () => {
    await runtime?.close();
    await fixture?.close();
  });

  const podsOf = async (id: string): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `paddock.dev/sandbox-id=${id}` })).items;

  test('create resolves once the pod runs; get, list and destroy see it come and go', async () => {
    const s = spec();
    const created = await runtime.create(s);
    assert.deepEqual(created, { id: s.id, accountId: s.accountId, status: 'running' });
    const [pod] = await podsOf(s.id);
    assert.equal(pod?.status?.phase, 'Running');
    assert.equal(pod?.status?.containerStatuses?.[0]?.ready, true);
    assert.deepEqual(await runtime.get(s.id), { id: s.id, accountId: s.accountId, status: 'running' });
    assert.ok((await runtime.list()).some((x) => x.id === s.id && x.status === 'running'));

    await runtime.destroy(s.id);
    assert.deepEqual(await podsOf(s.id), [], 'the pod is gone once destroy resolves');
    assert.equal(await runtime.get(s.id), undefined);
    assert.ok(!(await runtime.list()).some((x) => x.id === s.id));
  });

  test('create is idempotent: twice, even at once, makes one pod and one sandbox', async () => {
    const s = spec();
    const before = fixture!.backend.created.length;
    const [a, b] = await Promise.all([runtime.create(s), runtime.create(s)]);
    assert.equal(a.status, 'running');
    assert.equal(b.status, 'running');
    assert.equal((await runtime.create(s)).status, 'running');
    assert.equal((await podsOf(s.id)).length, 1);
    assert.equal(fixture!.backend.created.length - before, 1, 'one backend sandbox');
    await runtime.destroy(s.id);
  });

  test('destroy of a sandbox that does not exist, or no longer does, succeeds', async () => {
    await runtime.destroy(newId('sbx'));
    const s = spec();
    await runtime.create(s);
    await Promise.all([runtime.destroy(s.id), runtime.destroy(s.id)]);
    await runtime.destroy(s.id);
    assert.deepEqual(await podsOf(s.id), []);
    assert.equal(await runtime.get('not an id'), undefined);
  });

  test('an image that cannot be pulled fails create with a PermanentRuntimeError naming the reason', async () => {
    const s = spec({ image: UNPULLABLE });
    await assert.rejects(runtime.create(s, { timeoutMs: 10_000 }), (err: Error) => {
      assert.ok(err instanceof PermanentRuntimeError, `a PermanentRuntimeError, got ${err.name}: ${err.message}`);
      assert.match(err.message, /ErrImagePull|ImagePullBackOff/);
      assert.ok(err.message.includes(UNPULLABLE), err.message);
      return true;
    });
    const seen = await runtime.get(s.id);
    assert.equal(seen?.status, 'failed');
    assert.match(seen?.reason ?? '', /cannot be pulled/);
    await runtime.destroy(s.id);
  });

  test('an image that is not allowed is refused before any pod is made', async () => {
    const s = spec({ image: 'docker.io/library/alpine:3' });
    await assert.rejects(runtime.create(s), PermanentRuntimeError);
    assert.deepEqual(await podsOf(s.id), []);
  });

  test('a pod the API server refuses as invalid fails create with a PermanentRuntimeError', async () => {
    const s = { ...spec(), accountId: 'not a label value!' };
    await assert.rejects(runtime.create(s), (err: Error) => {
      assert.ok(err instanceof PermanentRuntimeError, `${err.name}: ${err.message}`);
      assert.match(err.message, /HTTP 422: Pod "sbx-[0-9a-z]+" is invalid: metadata\.labels/);
      return true;
    });
    assert.deepEqual(await podsOf(s.id), []);
  });

  test('a pod that does not start in time fails create with a plain, retryable Error', async () => {
    const s = spec();
    fixture!.backend.createDelayMs = 3000;
    try {
      await assert.rejects(runtime.create(s, { timeoutMs: 400 }), (err: Error) => {
        assert.ok(!(err instanceof PermanentRuntimeError), 'not permanent');
        assert.match(err.message, /did not start within/);
        assert.match(err.message, /ContainerCreating/);
        return true;
      });
    } finally {
      fixture!.backend.createDelayMs = 0;
    }
    await runtime.destroy(s.id);
    assert.deepEqual(await podsOf(s.id), []);
  });

  test('the cluster ends a sandbox at its deadline: capSeconds plus the grace period', async () => {
    const short = createKubernetesRuntime(runtimeOptions({ deadlineGraceSeconds: 0 }));
    const s = spec({ capSeconds: 2 });
    try {
      await short.create(s);
      assert.equal((await short.get(s.id))?.status, 'running');
      const started = Date.now();
      let seen = await short.get(s.id);
      while (seen?.status === 'running' && Date.now() - started < 5000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        seen = await short.get(s.id);
      }
      assert.equal(seen?.status, 'failed');
      assert.match(seen?.reason ?? '', /DeadlineExceeded/);
      await assert.rejects(short.exec(s.id, { argv: ['true'], timeoutMs: 5000 }), SandboxGoneError);
    } finally {
      await short.destroy(s.id);
      await short.close();
    }
  });

  test('get and list leave alone pods that Paddock did not make', async () => {
    const id = newId('sbx');
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: {
        metadata: { name: id.replace('_', '-'), labels: { app: 'someone-else' } },
        spec: { containers: [{ name: 'main', image: 'nginx' }] },
      },
    });
    try {
      assert.equal(await runtime.get(id), undefined);
      assert.ok(!(await runtime.list()).some((x) => x.id === id));
    } finally {
      await core.deleteNamespacedPod({ name: id.replace('_', '-'), namespace: NAMESPACE });
    }
  });

  describe('exec', () => {
    const id = newId('sbx');
    before(async () => {
      await runtime.create({ id, accountId: newId('acct'), capSeconds: 600 });
    });
    after(async () => {
      await runtime.destroy(id);
    });

    test('reports the exit code from the status channel', async () => {
      assert.equal((await run(runtime, id, ['true'])).result.exitCode, 0);
      assert.equal((await run(runtime, id, ['sh', '-c', 'exit 3'])).result.exitCode, 3);
      const last = await run(runtime, id, ['sh', '-c', 'exit 255']);
      assert.deepEqual(
        { exitCode: last.result.exitCode, signal: last.result.signal, timedOut: last.result.timedOut },
        { exitCode: 255, signal: null, timedOut: false },
      );
    });

    test('a command ended by a signal reports the signal, as 128 + n reads in Kubernetes', async () => {
      const { result } = await run(runtime, id, ['sh', '-c', 'kill -TERM $$']);
      assert.deepEqual({ exitCode: result.exitCode, signal: result.signal }, { exitCode: null, signal: 'SIGTERM' });
      const segv = await run(runtime, id, ['sh', '-c', 'kill -SEGV $$']);
      assert.equal(segv.result.signal, 'SIGSEGV');
      // Past the signal numbers, a code is a code.
      assert.equal((await run(runtime, id, ['sh', '-c', 'exit 200'])).result.exitCode, 200);
    });

    test('keeps stdout and stderr apart, with nothing of the wrapper in either', async () => {
      const { result, stdout, stderr } = await run(runtime, id, ['sh', '-c', 'printf out1; printf err1 >&2; printf out2; printf err2 >&2']);
      assert.equal(result.exitCode, 0);
      assert.equal(stdout, 'out1out2');
      assert.equal(stderr, 'err1err2');
    });

    test('passes stdin byte for byte and then closes it', async () => {
      const input = Buffer.from([0, 1, 2, 10, 255, 254, ...Buffer.from('héllo\n')]);
      const { result, stdoutBytes } = await run(runtime, id, ['cat'], { stdin: input });
      assert.equal(result.exitCode, 0);
      assert.deepEqual(stdoutBytes, input);
      const empty = await run(runtime, id, ['wc', '-c'], { stdin: new Uint8Array(0) });
      assert.equal(empty.stdout.trim(), '0');
    });

    test('runs in /workspace by default, or in the cwd asked for', async () => {
      assert.equal((await run(runtime, id, ['pwd'])).stdout, '/workspace\n');
      assert.equal((await run(runtime, id, ['pwd'], { cwd: '/tmp' })).stdout, '/tmp\n');
      await run(runtime, id, ['mkdir', '-p', 'sub dir']);
      assert.equal((await run(runtime, id, ['pwd'], { cwd: 'sub dir' })).stdout, '/workspace/sub dir\n');
      const missing = await run(runtime, id, ['pwd'], { cwd: '/no/such/dir' });
      assert.equal(missing.result.exitCode, 125);
      assert.match(missing.stderr, /\/no\/such\/dir/);
    });

    test('sets the environment exactly as given, whatever the values hold', async () => {
      const env = {
        PLAIN: 'value',
        SPACES: '  two  spaces ',
        SHELLY: '$(touch /tmp/pwned) `id` $HOME; exit 9 \'"',
        NEWLINE: 'a\nb',
        EQUALS: 'k=v=w',
        EMPTY: '',
      };
      for (const [name, value] of Object.entries(env)) {
        const { result, stdout } = await run(runtime, id, ['printenv', name], { env });
        assert.equal(result.exitCode, 0, name);
        assert.equal(stdout, `${value}\n`, name);
      }
      assert.equal((await run(runtime, id, ['sh', '-c', 'test -e /tmp/pwned && echo yes || echo no'])).stdout, 'no\n');
      await assert.rejects(run(runtime, id, ['true'], { env: { 'NOT-A-NAME': 'x' } }), TypeError);
    });

    test('passes argv through verbatim', async () => {
      const args = ['a b', '$HOME', '"quoted"', "it's", '*', '', '-n', '\\n'];
      const { stdout } = await run(runtime, id, ['printf', '%s|', ...args]);
      assert.equal(stdout, `${args.join('|')}|`);
    });

    test('answers 127 for a program that does not exist, as a shell does', async () => {
      const { result, stderr } = await run(runtime, id, ['no-such-program-here']);
      assert.equal(result.exitCode, 127);
      assert.match(stderr, /no-such-program-here/);
    });

    test('a timeout answers timedOut with the output so far and kills the whole process tree', async () => {
      const started = Date.now();
      const script = 'sleep 300 & echo $! > /tmp/background.pid; echo before; sleep 300; echo after';
      const { result, stdout } = await run(runtime, id, ['sh', '-c', script], { timeoutMs: 1000 });
      assert.equal(result.timedOut, true);
      assert.equal(result.exitCode, null);
      assert.equal(result.signal, 'SIGKILL');
      assert.equal(stdout, 'before\n');
      assert.ok(Date.now() - started < 2500, `answered in ${Date.now() - started} ms`);
      // The background sleep, in the same tree, is gone as well.
      const check = await run(runtime, id, ['sh', '-c', GONE_CHECK, 'check', '/tmp/background.pid']);
      assert.equal(check.stdout, 'gone\n');
    });

    test('aborting kills the command like a timeout does, without calling it one', async () => {
      const controller = new AbortController();
      const started = Date.now();
      const script = 'sleep 300 & echo $! > /tmp/aborted.pid; echo started; wait';
      // Aborted once the command has started its child (a fixed delay raced a loaded host).
      const { result, stdout } = await run(runtime, id, ['sh', '-c', script], {
        timeoutMs: 60_000,
        signal: controller.signal,
        onStdout: () => void setTimeout(() => controller.abort(), 100),
      });
      assert.equal(result.timedOut, false);
      assert.equal(result.exitCode, null);
      assert.equal(result.signal, 'SIGKILL');
      assert.equal(stdout, 'started\n');
      assert.ok(Date.now() - started < 5000);
      const check = await run(runtime, id, ['sh', '-c', GONE_CHECK, 'check', '/tmp/aborted.pid']);
      assert.equal(check.stdout, 'gone\n');
    });

    test('the in-pod watchdog ends the whole tree by itself should the runtime never kill it, what left the group too', async () => {
      // The wrapper alone, as a runtime that died mid-exec would have left it.
      const { argv, frame } = wrapperArgv({
        argv: ['sh', '-c', 'sleep 300 & echo $! > /tmp/watchdog.pid; setsid sh -c \'echo $$ > /tmp/watchdog-left.pid; exec sleep 301\' & echo waiting; sleep 300'],
        cwd: '/workspace',
        env: {},
        token: 'tok',
        watchdogSeconds: 1,
      });
      let stdout = '';
      const sink = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          stdout += chunk.toString();
          callback();
        },
      });
      const started = Date.now();
      const status = await new Promise<V1Status>((resolve, reject) => {
        new Exec(fixture!.standin.kubeConfig)
          .exec(NAMESPACE, id.replace('_', '-'), 'sandbox', argv, sink, null, Readable.from([frame]), false, resolve)
          .catch(reject);
      });
      assert.ok(Date.now() - started < 4000, `ended after ${Date.now() - started} ms`);
      assert.equal(stdout, 'waiting\n');
      assert.equal(status.reason, 'NonZeroExitCode');
      assert.deepEqual(status.details?.causes, [{ reason: 'ExitCode', message: '137' }]);
      for (const pidFile of ['/tmp/watchdog.pid', '/tmp/watchdog-left.pid']) {
        const check = await run(runtime, id, ['sh', '-c', GONE_CHECK, 'check', pidFile]);
        assert.equal(check.stdout, 'gone\n', pidFile);
      }
    });

    test('an already aborted request runs nothing', async () => {
      const controller = new AbortController();
      controller.abort();
      const { result } = await run(runtime, id, ['touch', '/tmp/should-not-exist'], { signal: controller.signal });
      assert.equal(result.exitCode, null);
      assert.equal(result.timedOut, false);
      assert.equal((await run(runtime, id, ['sh', '-c', 'test -e /tmp/should-not-exist && echo ran || echo not'])).stdout, 'not\n');
    });

    test('carries an environment as large as the API allows (64 values of 4 KiB) ahead of stdin', async () => {
      const env: Record<string, string> = {};
      for (let i = 0; i < 64; i++) env[`VAR_${i}`] = `${i}:${'é &?=%/'.repeat(585)}`.slice(0, 4096);
      const { result, stdout } = await run(runtime, id, ['printenv', 'VAR_63'], { env });
      assert.equal(result.exitCode, 0);
      assert.equal(stdout, `${env.VAR_63}\n`);
    });

    test('streams large output without losing any of it', async () => {
      const { result, stdout } = await run(runtime, id, ['sh', '-c', 'head -c 2000000 /dev/zero | tr "\\0" x']);
      assert.equal(result.exitCode, 0);
      assert.equal(stdout.length, 2_000_000);
      assert.match(stdout, /^x+$/);
    });

    test('an unknown or missing sandbox is a SandboxGoneError', async () => {
      await assert.rejects(runtime.exec(newId('sbx'), { argv: ['true'], timeoutMs: 5000 }), SandboxGoneError);
      await assert.rejects(runtime.exec('not-an-id', { argv: ['true'], timeoutMs: 5000 }), SandboxGoneError);
    });

    test('a sandbox that is not running is a SandboxGoneError', async () => {
      const s = spec({ image: UNPULLABLE });
      await runtime.create(s).catch(() => undefined);
      try {
        await assert.rejects(runtime.exec(s.id, { argv: ['true'], timeoutMs: 5000 }), (err: Error) => {
          assert.ok(err instanceof SandboxGoneError, `${err.name}: ${err.message}`);
          assert.match(err.message, /not running/);
          return true;
        });
      } finally {
        await runtime.destroy(s.id);
      }
    });
  });

  test('exec on a destroyed sandbox is a SandboxGoneError', async () => {
    const s = spec();
    await runtime.create(s);
    assert.equal((await run(runtime, s.id, ['true'])).result.exitCode, 0);
    await runtime.destroy(s.id);
    await assert.rejects(runtime.exec(s.id, { argv: ['true'], timeoutMs: 5000 }), SandboxGoneError);
  });
});

interface Ran {
  result: ExecResult;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
}

async function run(runtime: SandboxRuntime, id: string, argv: string[], extra: Partial<ExecRequest> = {}): Promise<Ran> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const result = await runtime.exec(id, {
    argv,
    timeoutMs: 20_000,
    ...extra,
    onStdout: (chunk) => {
      out.push(Buffer.from(chunk));
      return extra.onStdout?.(chunk);
    },
    onStderr: (chunk) => void err.push(Buffer.from(chunk)),
  });
  const stdoutBytes = Buffer.concat(out);
  return { result, stdout: stdoutBytes.toString(), stderr: Buffer.concat(err).toString(), stdoutBytes };
}
