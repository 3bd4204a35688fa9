import { setTimeout as sleep } from 'node:timers/promises';
import { runSession, type AgentAccount, type Fleet, type Sample } from './agent.ts';

// The fleet in an open loop (BENCH_LOAD_OPEN): sessions (a sandbox created, worked in, destroyed)
// arrive on a schedule, at exponential intervals of a given mean, whatever the answers to the
// sessions already running; each goes to the next account with a place free under its concurrent
// quota. An arrival that finds every account's places taken is counted and not run: the fleet's
// accounts are what a real population would have more of.

export interface OpenLoopRun {
  /** Sessions the schedule offered, those started, and those that found no account with a place. */
  offered: number;
  started: number;
  noPlace: number;
}

export async function runOpenLoop(fleet: Fleet, accounts: AgentAccount[], sessionsPerSecond: number, seconds: number, placesPerAccount: number): Promise<OpenLoopRun> {
  const running = new Map<string, number>();
  const sessions = new Set<Promise<void>>();
  const run: OpenLoopRun = { offered: 0, started: 0, noPlace: 0 };
  const end = Date.now() + seconds * 1000;
  let due = Date.now();
  let cursor = 0;
  while (!fleet.stopped()) {
    due += -Math.log(1 - Math.random()) * (1000 / sessionsPerSecond);
    if (due >= end) break;
    await sleep(Math.max(0, due - Date.now()), undefined, { signal: fleet.stopSignal }).catch(() => undefined);
    if (fleet.stopped()) break;
    run.offered++;
    let account: AgentAccount | undefined;
    for (let i = 0; i < accounts.length && !account; i++) {
      const candidate = accounts[(cursor + i) % accounts.length]!;
      if ((running.get(candidate.id) ?? 0) < placesPerAccount) {
        account = candidate;
        cursor = (cursor + i + 1) % accounts.length;
      }
    }
    if (!account) {
      run.noPlace++;
      continue;
    }
    const id = account.id;
    running.set(id, (running.get(id) ?? 0) + 1);
    run.started++;
    const session: Promise<void> = runSession(fleet, account, run.started).finally(() => {
      running.set(id, running.get(id)! - 1);
      sessions.delete(session);
    });
    sessions.add(session);
  }
  await Promise.all(sessions);
  return run;
}

/** Sessions a window completed: its destroys answered. */
export function completedSessions(samples: Sample[]): number {
  return samples.filter((s) => s.route === 'DELETE /v1/sandboxes/{id}' && s.status >= 200 && s.status < 300).length;
}
