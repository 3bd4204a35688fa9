import type { ExecRequest } from '../types.ts';

export interface Deadline {
  /** Whether the timeout, rather than the command or the caller, ended it. */
  readonly timedOut: boolean;
  /** Ends the timeout's watch only (the command has exited; an abort still stops what it left). */
  exited(): void;
  /** Ends both watches, once the answer is settled. */
  disarm(): void;
}

/**
 * An exec's two ways to be stopped from outside, the same for every way of running it: its
 * timeout (marked, so the answer says timed out) and its caller's abort.
 */
export function armDeadline(request: Pick<ExecRequest, 'timeoutMs' | 'signal'>, stop: () => void): Deadline {
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      stop();
    },
    // Past 2^31 - 1 ms, setTimeout would fire at once.
    Math.min(request.timeoutMs, 2 ** 31 - 1),
  );
  request.signal?.addEventListener('abort', stop, { once: true });
  return {
    get timedOut() {
      return timedOut;
    },
    exited() {
      clearTimeout(timer);
    },
    disarm() {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', stop);
    },
  };
}
