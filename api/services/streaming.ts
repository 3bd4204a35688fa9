import { Transform } from 'node:stream';
import type { AppContext } from '../context.ts';
import type { KeySession } from '../auth/key-sessions.ts';

// What every streamed answer needs: pacing by the client, and stopping when it goes.

/** Where an answer is written: a stream Koa pipes to the client, or the response itself. */
export interface Sink {
  write(data: string | Buffer, callback?: (err?: Error | null) => void): boolean;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
  destroy(): unknown;
  readonly destroyed: boolean;
  /** Bytes written and not yet taken: falling means the client is reading. */
  readonly writableLength: number;
}

/**
 * Resolves once `stream` has taken its buffer (or closed). A reader that takes nothing for
 * `timeoutMs` is given up on: `onStall` runs, then the stream is destroyed, so a client that never
 * reads holds a bounded buffer, briefly. A reader that takes some of it in each such window is
 * slow, not stalled, and is waited for: a loaded client can need longer than the timeout to take a
 * whole buffer (one CI run dropped a reader taking a chunk every 15 ms).
 */
export function drained(stream: Sink, timeoutMs: number, onStall: () => void): Promise<void> {
  return new Promise<void>((resolve) => {
    let pending = stream.writableLength;
    let settled = false;
    const done = () => {
      settled = true;
      clearTimeout(timer);
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    const check = () => {
      if (settled) return;
      const now = stream.writableLength;
      if (now < pending) {
        pending = now;
        timer = setTimeout(expired, timeoutMs);
        return;
      }
      onStall();
      stream.destroy();
      done();
    };
    // Judged after this turn's I/O: after a long stall of the loop, timers run before the writes
    // it completed meanwhile are counted.
    const expired = () => setImmediate(check);
    let timer = setTimeout(expired, timeoutMs);
    stream.once('drain', done);
    stream.once('close', done);
  });
}

/**
 * Runs `send` once the request's key allows it (auth/key-sessions.ts): at once while it is
 * confirmed, after the next check while it is not, never once it is revoked.
 */
export function whenConfirmed<T>(session: KeySession | undefined, send: () => T): T | undefined | Promise<T | undefined> {
  const ready = session ? session.ready() : true;
  if (ready === true) return send();
  if (ready === false) return undefined;
  return ready.then((ok) => (ok ? send() : undefined));
}

/**
 * Writes onto `stream` at its client's pace: `write` answers a promise while the client is behind
 * (or while the request's key waits to be confirmed). A client that takes nothing for `timeoutMs`
 * is given up on (drained's `onStall`), and `gone` is true from then on, or once the stream is
 * destroyed or the key revoked: later writes are dropped.
 */
export function pacedWriter(stream: Sink, timeoutMs: number, onStall: () => void, session?: KeySession) {
  let stalled = false;
  const gone = (): boolean => stalled || stream.destroyed || session?.revoked === true;
  const put = (data: string | Buffer, written?: (err?: Error | null) => void): void | Promise<void> => {
    if (gone()) return;
    if (stream.write(data, written)) return;
    return drained(stream, timeoutMs, () => {
      stalled = true;
      onStall();
    });
  };
  /** `written` runs once the stream is done with `data` (with an error when it never took it). */
  const write = (data: string | Buffer, written?: (err?: Error | null) => void): void | Promise<void> => {
    if (gone()) return;
    return whenConfirmed(session, () => put(data, written)) as void | Promise<void>;
  };
  return { write, gone };
}

/**
 * A stream whose chunks go on only while the request's key is confirmed (auth/key-sessions.ts),
 * holding at most one chunk past that check, so what waits in it is checked again as it leaves.
 */
export function confirmedStream(session: KeySession | undefined): Transform {
  return new Transform({
    readableHighWaterMark: 1,
    transform(chunk: Buffer, _encoding, done) {
      const sent = whenConfirmed(session, () => chunk);
      if (!(sent instanceof Promise)) return done(null, sent);
      void sent.then((ok) => done(null, ok));
    },
  });
}

/** Fired when the client goes before its answer is whole, or the request's key is revoked: the work for it stops. */
export function abortOnDisconnect(ctx: AppContext): AbortController {
  const controller = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) controller.abort();
  });
  const revoked = ctx.state.session?.signal;
  if (revoked?.aborted) controller.abort();
  else revoked?.addEventListener('abort', () => controller.abort(), { once: true, signal: controller.signal });
  return controller;
}
