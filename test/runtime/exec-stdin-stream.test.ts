import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { newId } from '../../shared/ids.ts';
import { createKubernetesRuntime } from '../../shared/runtime/kubernetes/index.ts';
import { createLocalRuntime } from '../../shared/runtime/local/index.ts';
import type { ExecRequest, SandboxRuntime } from '../../shared/runtime/types.ts';
import { startStandinFixture, type StandinFixture } from '../k8s-standin/fixture.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A streamed stdin (ExecRequest.stdin as an async iterable) on the runtime PADDOCK_TEST_RUNTIME
// names: the kubernetes runtime through the API stand-in, the local one straight.

const RUNTIME = process.env.PADDOCK_TEST_RUNTIME === 'kubernetes' ? 'kubernetes' : 'local';
const MiB = 1024 * 1024;

/** A source of `total` bytes in chunks of odd sizes, counting what was taken and whether it was returned. */
function source(total: number, options: { failAt?: number } = {}) {
  const state = { pulled: 0, returned: false, hash: createHash('sha256') };
  const sizes = [65536, 1, 300_000, 4096, 1_000_003, 17];
  const iterable = (async function* () {
    try {
      let i = 0;
      while (state.pulled < total) {
        const size = Math.min(sizes[i++ % sizes.length]!, total - state.pulled);
        const chunk = Buffer.alloc(size, state.pulled % 251);
        chunk[0] = i & 0xff;
        if (options.failAt !== undefined && state.pulled + size > options.failAt) throw new Error('the source broke');
        state.pulled += size;
        state.hash.update(chunk);
        yield chunk;
      }
    } finally {
      state.returned = true;
    }
  })();
  return { iterable, state };
}

describe(`streamed stdin on the ${RUNTIME} runtime`, () => {
  let runtime: SandboxRuntime;
  let id: string;
  let cleanup: () => Promise<void>;
  let fixture: StandinFixture | undefined;

  before(async () => {
    if (RUNTIME === 'kubernetes') {
      fixture = await startStandinFixture();
      runtime = createKubernetesRuntime({
        kubeConfig: fixture.standin.kubeConfig ?? new KubeConfig(),
        namespace: 'paddock-test',
        defaultImage: 'docker.io/library/debian:bookworm-slim',
        allowedImages: [],
        resources: { cpuRequest: '250m', cpuLimit: '1', memoryRequest: '256Mi', memoryLimit: '1Gi' },
        deadlineGraceSeconds: 120,
      });
      cleanup = async () => {
        await runtime.close();
        await fixture!.close();
      };
    } else {
      const dataDir = await mkdtemp(join(tmpdir(), 'paddock-stdin-'));
      runtime = createLocalRuntime({ dataDir, memoryMb: 256, pidsMax: 128 });
      cleanup = async () => {
        for (const s of await runtime.list()) await runtime.destroy(s.id);
        await runtime.close();
        await rm(dataDir, { recursive: true, force: true });
      };
    }
    id = newId('sbx');
    await runtime.create({ id, accountId: newId('acct'), capSeconds: 600 });
  });
  after(async () => {
    await runtime.destroy(id).catch(() => undefined);
    await cleanup();
  });

  async function run(argv: string[], extra: Partial<ExecRequest>) {
    let stdout = '';
    let stderr = '';
    const result = await runtime.exec(id, {
      argv,
      timeoutMs: 60_000,
      onStdout: (chunk) => void (stdout += Buffer.from(chunk).toString()),
      onStderr: (chunk) => void (stderr += Buffer.from(chunk).toString()),
      ...extra,
    });
    return { ...result, stdout, stderr };
  }

  test('a consumer that takes the output slowly gets every byte, to the last, before the answer', async () => {
    // The command ends long before its output is taken: what the runtime still holds when the
    // end is known must reach the consumer, not be dropped with the answer.
    let taken = 0;
    const result = await runtime.exec(id, {
      argv: ['sh', '-c', 'head -c 3000000 /dev/zero; echo tail >&2'],
      timeoutMs: 60_000,
      onStdout: async (chunk) => {
        taken += chunk.length;
        await delay(3);
      },
    });
    assert.equal(result.exitCode, 0);
    assert.equal(taken, 3_000_000);
  });

  test('64 MiB arrive whole and in order, then stdin closes', async () => {
    const { iterable, state } = source(64 * MiB);
    const ran = await run(['sh', '-c', 'sha256sum; echo end'], { stdin: iterable });
    assert.equal(ran.exitCode, 0, ran.stderr);
    assert.equal(ran.stdout, `${state.hash.digest('hex')}  -\nend\n`);
    assert.equal(state.pulled, 64 * MiB);
    const counted = await run(['wc', '-c'], { stdin: source(3 * MiB + 7).iterable });
    assert.equal(counted.stdout.trim(), String(3 * MiB + 7));
  });

  test('an empty stream is an empty stdin; bytes given whole still work', async () => {
    const empty = await run(['wc', '-c'], { stdin: (async function* () {})() });
    assert.equal(empty.stdout.trim(), '0');
    assert.equal((await run(['cat'], { stdin: Buffer.from('whole') })).stdout, 'whole');
  });

  test('a command that stops reading holds the source back instead of buffering it', async () => {
    const { iterable, state } = source(256 * MiB);
    const ran = await run(['sh', '-c', 'head -c 1000 >/dev/null; sleep 2; echo slept'], { stdin: iterable });
    assert.equal(ran.stdout, 'slept\n');
    // Windows and pipe and socket buffers on the way, a few MiB at most: not the 256 MiB offered.
    assert.ok(state.pulled < 16 * MiB, `pulled ${state.pulled} bytes`);
    await delay(100);
    assert.ok(state.returned, 'the source was returned once the command was done');
  });

  test('a command that exits early ends the exec at once, and the source is returned', async () => {
    const { iterable, state } = source(256 * MiB);
    const started = performance.now();
    const ran = await run(['head', '-c', '10'], { stdin: iterable });
    assert.equal(ran.exitCode, 0);
    assert.equal(ran.stdout.length, 10);
    assert.ok(performance.now() - started < 20_000);
    await delay(100);
    assert.ok(state.returned);
    assert.ok(state.pulled < 16 * MiB, `pulled ${state.pulled} bytes`);
  });

  test('aborting mid-stream kills the command and returns the source', async () => {
    const abort = new AbortController();
    const { iterable, state } = source(1024 * MiB);
    const watched = (async function* () {
      for await (const chunk of iterable) {
        if (state.pulled > 4 * MiB) abort.abort();
        yield chunk;
      }
    })();
    const ran = await run(['sh', '-c', 'cat >/dev/null; echo finished'], { stdin: watched, signal: abort.signal });
    assert.equal(ran.exitCode, null);
    assert.equal(ran.signal, 'SIGKILL');
    assert.equal(ran.stdout, '');
    await delay(100);
    assert.ok(state.returned);
    assert.ok(state.pulled < 64 * MiB, `pulled ${state.pulled} bytes`);
  });

  test('a source that throws stops the command, whose stdin never looks complete, and exec rejects with its error', async () => {
    const { iterable } = source(64 * MiB, { failAt: 2 * MiB });
    const marker = `/tmp/finished-${newId('sbx')}`;
    await assert.rejects(
      run(['sh', '-c', 'cat >/dev/null; touch "$1"', 'sh', marker], { stdin: iterable }),
      /the source broke/,
    );
    await delay(200);
    const check = await run(['sh', '-c', '[ -e "$1" ] && echo present || echo absent', 'sh', marker], {});
    assert.equal(check.stdout, 'absent\n');
    // The sandbox goes on working.
    assert.equal((await run(['echo', 'ok'], {})).stdout, 'ok\n');
  });
});
