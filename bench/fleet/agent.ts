import { setTimeout as sleep } from 'node:timers/promises';

// One account of the fleet, working as an agent does: create a sandbox, write a file, run
// commands, view, edit, list and search files, destroy it, again, as fast as its rate limits and
// quotas allow. A 429 is waited out (Retry-After) and the same request sent again. Every answer
// that carries content is checked, so lost or mixed-up work shows as a wrong answer, not a speed.

/** One request as the client saw it. */
export interface Sample {
  route: string;
  status: number;
  /** The problem's `code` on an error answer; `bucket` too on a rate-limit refusal. */
  code?: string;
  bucket?: string;
  /** Network error or timeout, when there was no answer. */
  error?: string;
  startedAt: number;
  ms: number;
}

export interface AgentAccount {
  id: string;
  key: string;
}

export interface Fleet {
  /** Web base URLs; each request goes to the next (the client side of a round-robin balancer). */
  urls: string[];
  /** True once the measured window is over: no new request starts. */
  stopped(): boolean;
  /** Aborts a Retry-After wait when the window ends. */
  stopSignal: AbortSignal;
  record(sample: Sample): void;
  /** An answer whose content was not what the agent's own earlier requests imply. */
  wrong(what: string): void;
  requestTimeoutMs: number;
  /** A create answered from the warm pool (its sandbox was ready when its row was written). */
  pooled(): void;
  /** The agents' mean think time before each request, ms (0: a closed loop, each request sent as the last is answered). */
  thinkMs: number;
}

interface Answer {
  status: number;
  body: any;
  /** Seconds, from Retry-After (on a 429). */
  retryAfter: number;
}

const NOTES = 'notes.txt';
const CYCLES_PER_SANDBOX = 3;

let nextWeb = 0;

async function send(fleet: Fleet, key: string, route: string, method: string, path: string, body?: unknown): Promise<Answer | undefined> {
  const url = fleet.urls[nextWeb++ % fleet.urls.length]!;
  const startedAt = Date.now();
  const t0 = performance.now();
  try {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(fleet.requestTimeoutMs),
    });
    const text = await res.text();
    const ms = performance.now() - t0;
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = { unparsable: text.slice(0, 200) };
    }
    const sample: Sample = { route, status: res.status, startedAt, ms };
    if (res.status >= 400) {
      sample.code = parsed?.code ?? 'no_code';
      if (parsed?.bucket) sample.bucket = parsed.bucket;
    }
    fleet.record(sample);
    return { status: res.status, body: parsed, retryAfter: Number(res.headers.get('retry-after') ?? 1) };
  } catch (err) {
    const e = err as Error;
    const error = e.name === 'TimeoutError' ? 'timeout' : ((e.cause as Error | undefined)?.message ?? e.message);
    fleet.record({ route, status: 0, error, startedAt, ms: performance.now() - t0 });
    return undefined;
  }
}

/**
 * Sends until the answer is not a 429 (waiting Retry-After between tries) or the window ends.
 * Undefined when the window ended first or the request got no answer.
 */
async function untilServed(fleet: Fleet, key: string, route: string, method: string, path: string, body?: unknown): Promise<Answer | undefined> {
  if (fleet.thinkMs > 0) await pause(fleet, thinkTime(fleet.thinkMs) / 1000);
  while (!fleet.stopped()) {
    const answer = await send(fleet, key, route, method, path, body);
    if (!answer) {
      await pause(fleet, 1);
      return undefined;
    }
    if (answer.status !== 429) return answer;
    await pause(fleet, answer.retryAfter);
  }
  return undefined;
}

async function pause(fleet: Fleet, seconds: number): Promise<void> {
  await sleep(Math.max(0.1, seconds) * 1000, undefined, { signal: fleet.stopSignal }).catch(() => undefined);
}

/**
 * A think time drawn from an exponential distribution of the given mean (capped at five means):
 * the fleet's requests then arrive as independent users' do, not in lockstep, and the first
 * draw spreads the agents' first creates over the window's opening.
 */
function thinkTime(meanMs: number): number {
  return Math.min(5 * meanMs, -Math.log(1 - Math.random()) * meanMs);
}

/** The agent's loop of sessions; returns when the window ends and its last request is answered. */
export async function runAgent(fleet: Fleet, account: AgentAccount): Promise<void> {
  for (let round = 1; !fleet.stopped(); round++) await runSession(fleet, account, round);
}

/**
 * One session: a sandbox created, worked in, destroyed. Half the destroys wait for the pod to be
 * gone, half do not (the next create may then find the concurrent quota still taken, as a real
 * agent would): by `round`'s parity.
 */
export async function runSession(fleet: Fleet, account: AgentAccount, round: number): Promise<void> {
  const created = await untilServed(fleet, account.key, 'POST /v1/sandboxes', 'POST', '/v1/sandboxes', { metadata: { bench: 'load' } });
  if (!created) return;
  if (created.status !== 201) {
    fleet.wrong(`create answered ${created.status} ${created.body?.code}`);
    return pause(fleet, 1);
  }
  const sandbox = created.body as { id: string; status: string; createdAt: string; readyAt: string | null };
  if (sandbox.readyAt === sandbox.createdAt) fleet.pooled();
  if (sandbox.status === 'running') await work(fleet, account.key, sandbox.id);
  else fleet.wrong(`a sandbox came back ${sandbox.status}`);
  await untilServed(fleet, account.key, 'DELETE /v1/sandboxes/{id}', 'DELETE', `/v1/sandboxes/${sandbox.id}${round % 2 === 0 ? '' : '?wait=false'}`);
}

async function work(fleet: Fleet, key: string, id: string): Promise<void> {
  const base = `/v1/sandboxes/${id}`;
  const file = `${base}/files?path=${NOTES}`;
  const put = await untilServed(fleet, key, 'PUT /v1/sandboxes/{id}/files', 'PUT', file, { content: 'title: load\ncount=0\n' });
  if (!put) return;
  if (put.status !== 201) return fleet.wrong(`create file answered ${put.status} ${put.body?.code}`);
  for (let count = 0; count < CYCLES_PER_SANDBOX && !fleet.stopped(); count++) {
    const exec = await untilServed(fleet, key, 'POST /v1/sandboxes/{id}/exec', 'POST', `${base}/exec`, { command: `grep -c count=${count} ${NOTES} && ls -la /workspace` });
    if (!exec) return;
    if (exec.status !== 200 || exec.body.exitCode !== 0 || !exec.body.stdout.startsWith('1\n')) return fleet.wrong(`exec: ${exec.status} ${JSON.stringify(exec.body).slice(0, 200)}`);

    const view = await untilServed(fleet, key, 'GET /v1/sandboxes/{id}/files', 'GET', file);
    if (!view) return;
    if (view.status !== 200 || !String(view.body.content).includes(`count=${count}\n`)) return fleet.wrong(`view: ${view.status} ${JSON.stringify(view.body).slice(0, 200)}`);

    const edit = await untilServed(fleet, key, 'PATCH /v1/sandboxes/{id}/files', 'PATCH', file, { oldText: `count=${count}`, newText: `count=${count + 1}` });
    if (!edit) return;
    if (edit.status !== 200 || edit.body.replacements !== 1) return fleet.wrong(`edit: ${edit.status} ${JSON.stringify(edit.body).slice(0, 200)}`);

    const which = count % 2 === 0 ? 'ls' : 'grep';
    const search = which === 'ls' ? `${base}/files/ls?path=.` : `${base}/files/grep?pattern=count%3D${count + 1}&path=.`;
    const found = await untilServed(fleet, key, `GET /v1/sandboxes/{id}/files/${which}`, 'GET', search);
    if (!found) return;
    const ok = which === 'ls' ? found.body.entries?.some((e: { name: string }) => e.name === NOTES) : found.body.matches?.length === 1;
    if (found.status !== 200 || !ok) return fleet.wrong(`${which}: ${found.status} ${JSON.stringify(found.body).slice(0, 200)}`);
  }
}
