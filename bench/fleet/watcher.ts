import { setTimeout as sleep } from 'node:timers/promises';
import { call, percentile } from '../stack.ts';
import { signUp } from '../targets.ts';
import type { BenchRow } from '../types.ts';
import type { Sample } from './agent.ts';
import { servedMs } from './tally.ts';

// The responsiveness goal: while sandboxes keep every core busy, the control plane still
// answers. Beside the fleet, accounts spin a busy loop in a sandbox per core (each sandbox
// gets at most PADDOCK_LOCAL_CPUS of CPU; an account each), and another reads its own sandbox with
// GET /v1/sandboxes/{id} ten times a second, alternating webs. The sandboxes' claim on the CPU is
// the stack's PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT (bench/fleet/index.ts): the product's default is a
// quarter of a process group's weight (shared/runtime/local/cgroups.ts).

const GET_GOAL_P99_MS = 50;
const LIFECYCLE_GOAL_P99_MS = 1000;
const READ_EVERY_MS = 100;

/** The fleet's window: its start (ms since the epoch), its agents, and the requests started in it. */
export interface Window {
  startedAt: number;
  agents: number;
  requests: number;
  seconds: number;
  /** The agents' mean think time before each request, ms. */
  thinkMs: number;
  /** In an open loop: the sessions a second offered, that fraction of the closed loop's, and what became of them. */
  open?: { perSecond: number; fraction: number; offered: number; started: number; noPlace: number };
}

/** One of the reader's answered GETs: when it was sent (ms since the epoch), and how long it took. */
interface Read {
  at: number;
  ms: number;
}

/** Lifecycle requests started this long after the window's start are past its opening burst. */
const OPENING_MS = 10_000;

export interface Watcher {
  /** Stops reading, ends the spinners, destroys both accounts' sandboxes; the rows. */
  finish(lifecycle: Sample[], window: Window): Promise<BenchRow[]>;
}

async function sandboxOf(url: string, key: string): Promise<string> {
  const created = await call(url, key, 'POST', '/v1/sandboxes', {});
  const body = created.body as { id: string; status: string };
  if (created.status !== 201 || body.status !== 'running') throw new Error(`the watcher's sandbox: ${created.status} ${JSON.stringify(created.body)}`);
  return body.id;
}

/** Starts the spinners and the reader; `claim` says how the stack's sandboxes claim the CPU. */
export async function startWatcher(urls: string[], spinners: number, seconds: number, claim: string): Promise<Watcher> {
  const url = urls[0]!;
  const reader = await signUp(url);
  const readBox = await sandboxOf(url, reader.key);
  // An account each: a spinner is one sandbox, whatever the concurrent quota.
  const spinBoxes: { key: string; id: string }[] = [];
  for (let i = 0; i < spinners; i++) {
    const { key } = await signUp(url);
    spinBoxes.push({ key, id: await sandboxOf(url, key) });
  }
  const spins = spinBoxes.map(({ key, id }) =>
    call(url, key, 'POST', `/v1/sandboxes/${id}/exec`, { command: `timeout ${seconds + 5} sh -c 'while :; do :; done'; true`, timeoutSeconds: seconds + 30 }),
  );
  const reads: Read[] = [];
  const failures: string[] = [];
  let reading = true;
  const readLoop = (async () => {
    for (let i = 0; reading; i++) {
      const next = performance.now() + READ_EVERY_MS;
      const at = Date.now();
      const res = await call(urls[i % urls.length]!, reader.key, 'GET', `/v1/sandboxes/${readBox}`);
      if (res.status === 200 && (res.body as { id?: string }).id === readBox) reads.push({ at, ms: res.ms });
      else failures.push(`${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      await sleep(Math.max(0, next - performance.now()));
    }
  })();

  return {
    async finish(lifecycle, window) {
      reading = false;
      await readLoop;
      const spun = await Promise.all(spins);
      for (const { key, id } of [{ key: reader.key, id: readBox }, ...spinBoxes]) await call(url, key, 'DELETE', `/v1/sandboxes/${id}`);
      const table = `responsiveness with every core busy in sandboxes (${spinners} busy loops; sandboxes as ${claim})`;
      const served = servedMs(lifecycle);
      const readMs = reads.map((r) => r.ms);
      return [
        {
          table,
          subject: 'GET /v1/sandboxes/{id}, 10 a second, another account',
          figures: { n: readMs.length, 'p50 ms': percentile(readMs, 50), 'p99 ms': percentile(readMs, 99), 'max ms': percentile(readMs, 100), failed: failures.length },
          goal: { text: `p99 < ${GET_GOAL_P99_MS} ms`, met: failures.length === 0 && percentile(readMs, 99) < GET_GOAL_P99_MS },
          detail: { failures: failures.slice(0, 10), spinners: spun.map((s) => s.status) },
        },
        {
          table,
          subject: 'the fleet\'s lifecycle routes (create until running, destroy)',
          figures: { n: served.length, 'p50 ms': percentile(served, 50), 'p99 ms': percentile(served, 99), 'max ms': percentile(served, 100), failed: 0 },
          goal: { text: `p99 < ${LIFECYCLE_GOAL_P99_MS} ms`, met: percentile(served, 99) < LIFECYCLE_GOAL_P99_MS },
        },
        closedLoopRow(lifecycle, reads, window),
      ];
    },
  };
}

/**
 * What the fleet's shape alone implies. Each agent thinks (a mean of `thinkMs`, 0 by default)
 * and sends its next request once the last is answered (a 429 waited out first), so by Little's
 * law the agents over the requests answered a second is a request's mean think time plus its
 * mean time taken, whatever the code: in a closed loop all of it is time taken, and the fleet
 * offers whatever the machine answers. In a closed loop every agent starts with a create, so the
 * window opens with that many creates at once; with a think time, the first draws spread them
 * over the opening. The lifecycle's and the reader's p99 past the opening show the steady state.
 */
function closedLoopRow(lifecycle: Sample[], reads: Read[], window: Window): BenchRow {
  if (window.open) return openLoopRow(lifecycle, reads, window, window.open);
  const opening = lifecycle.filter((s) => s.startedAt < window.startedAt + OPENING_MS);
  const later = lifecycle.filter((s) => s.startedAt >= window.startedAt + OPENING_MS);
  const perSecond = window.requests / window.seconds;
  return {
    table: "what the fleet's shape implies",
    subject: window.thinkMs > 0 ? `${window.agents} agents, ${window.thinkMs} ms mean think time` : `the closed loop: ${window.agents} agents, no think time`,
    figures: {
      'answered req/s': Math.round(perSecond * 10) / 10,
      'agents / req/s, ms': perSecond > 0 ? Math.round((window.agents / perSecond) * 1000) : NaN,
      'mean think ms': window.thinkMs,
      [`lifecycle started in the first ${OPENING_MS / 1000} s`]: opening.length,
      'their p99 ms': percentile(servedMs(opening), 99),
      'lifecycle p99 after them, ms': percentile(servedMs(later), 99),
      "the reader's GET p99 after them, ms": percentile(reads.filter((r) => r.at >= window.startedAt + OPENING_MS).map((r) => r.ms), 99),
    },
  };
}

/**
 * The open loop's shape: sessions offered on a schedule at a fraction of the closed loop's pace,
 * whatever the answers, so a request's time is the machine's, not the fleet's size over the
 * throughput; no opening burst either (arrivals are spread from the first).
 */
function openLoopRow(lifecycle: Sample[], reads: Read[], window: Window, open: NonNullable<Window['open']>): BenchRow {
  return {
    table: "what the fleet's shape implies",
    subject: `the open loop: ${open.perSecond.toFixed(2)} sessions a second offered, ${Math.round(open.fraction * 100)}% of the closed loop's`,
    figures: {
      'answered req/s': Math.round((window.requests / window.seconds) * 10) / 10,
      'sessions offered': open.offered,
      started: open.started,
      'no account free': open.noPlace,
      'lifecycle p99 ms': percentile(servedMs(lifecycle), 99),
      "the reader's GET p99 ms": percentile(reads.map((r) => r.ms), 99),
    },
  };
}
