import type { PaddockClient } from '../api/index.ts';
import type { NetworkPolicy, Sandbox, SandboxListState } from '../api/types.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { countdown, duration } from '../output/format.ts';
import { canPrompt, choose, confirm } from '../terminal/prompt.ts';

const POLL_MS = 500;

export interface CreateSessionInput {
  image?: string;
  metadata?: Record<string, string>;
  env?: Record<string, string>;
  /** Its own end, this many seconds after the create (the session cap when not given). */
  timeoutSeconds?: number;
  /** A ready snapshot whose /workspace the session starts with. */
  snapshot?: string;
  /** Its /workspace snapshotted when it ends. */
  snapshotOnDestroy?: boolean;
  /** Where its programs may connect; the operator's default when not given. */
  network?: NetworkPolicy;
  /** Wait until running (default), or answer as soon as it is accepted. */
  wait?: boolean;
  /** Told each status while the session starts. */
  onStatus?: (sandbox: Sandbox) => void;
  signal?: AbortSignal;
}

/** Creates a session and, unless told not to, polls it until it is running or has failed. */
export async function createSession(client: PaddockClient, input: CreateSessionInput): Promise<Sandbox> {
  let sandbox = await client.createSandbox(
    {
      image: input.image,
      metadata: input.metadata,
      env: input.env,
      timeoutSeconds: input.timeoutSeconds,
      snapshot: input.snapshot,
      ...(input.snapshotOnDestroy ? { snapshotOnDestroy: true } : {}),
      ...(input.network ? { network: input.network } : {}),
      wait: false,
    },
    { signal: input.signal },
  );
  input.onStatus?.(sandbox);
  if (input.wait === false) return sandbox;
  while (sandbox.status === 'pending') {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    sandbox = await client.getSandbox(sandbox.id, { signal: input.signal });
    input.onStatus?.(sandbox);
  }
  if (sandbox.status !== 'running') {
    throw new CliError(`Session ${sandbox.id} did not start: ${sandbox.failureMessage ?? sandbox.status}.`, {
      hint: 'Try again; if it keeps failing, check `paddock session get` for the reason.',
      code: 'session_failed',
    });
  }
  return sandbox;
}

export function listSessions(client: PaddockClient, state: SandboxListState): Promise<Sandbox[]> {
  return client.listSandboxes(state, { limit: 1000 });
}

/** One line about a session, to choose by. */
export function describeSession(s: Sandbox, now = Date.now()): string {
  return `${s.id}  ${s.status}  age ${duration(now - Date.parse(s.createdAt))}  ${countdown(Date.parse(s.expiresAt), now)} left`;
}

/**
 * The session a command works on: the one given, else the one active session when there is
 * exactly one. With none, or several, it asks for --session (listing the choices); at a
 * terminal it lets the person pick one of several instead.
 */
export async function pickSession(client: PaddockClient, given: string | undefined): Promise<string> {
  if (given) return given;
  const active = await client.listSandboxes('active');
  if (active.length === 1) return active[0]!.id;
  if (active.length === 0) {
    throw new CliError('There is no active session.', {
      hint: 'Create one with `paddock session create`, or pass --session <session_id>.',
      code: 'no_active_session',
    });
  }
  const choices = active.map((s) => describeSession(s));
  if (canPrompt()) return active[await choose('Several sessions are active. Which one?', choices, { what: 'A session', instead: '--session <session_id>' })]!.id;
  throw new CliError(`${active.length} sessions are active; say which one with --session <session_id>. The choices:\n${choices.map((c) => `  ${c}`).join('\n')}`, {
    hint: 'Pass --session <session_id>.',
    exitCode: EXIT_USAGE,
    code: 'session_required',
  });
}

/**
 * A session picked for the person (the one active) is destroyed, files and all, only once they
 * say so at a terminal; a script (no terminal) meant it, as before.
 */
export async function confirmImpliedDestroy(id: string, yes: boolean): Promise<boolean> {
  if (yes || !canPrompt()) return true;
  return confirm(`Destroy ${id}, the one active session, and its files?`, { what: 'A confirmation', instead: 'the session id, or --yes' });
}
