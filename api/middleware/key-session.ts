import { Stream } from 'node:stream';
import type { Next } from 'koa';
import { ApiError } from '../../shared/errors.ts';
import { REVOKED_DETAIL, type KeySession, type OpenedSession } from '../auth/key-sessions.ts';
import type { AppContext } from '../context.ts';
import { whenAnswerEnds } from './answer-end.ts';

type OpenSession = Pick<OpenedSession, keyof KeySession | 'release'>;

/**
 * Makes the rest of a request made with an API key one of its key's open requests
 * (auth/key-sessions.ts), which a revocation of the key ends: call finishKeySession once the
 * chain has run. By default its work is aborted (`session.signal`), and its connection closed when
 * its answer has begun or its body is still coming; an answer not begun is a 401. Routes that
 * stream set a clearer end of their own (a WebSocket's close code, a stream's last line), and send
 * their frames, events, lines and chunks only while the key is confirmed. An answer in one piece
 * goes out once the key is confirmed, or at once while this replica cannot reach Redis: it
 * answers the requests it had in hand, as it would have a moment earlier (auth/key-sessions.ts, on
 * what that costs). Two plain calls, not a middleware of its own: no promise or microtask more on
 * every request.
 */
export function startKeySession(ctx: AppContext, session: OpenSession): void {
  ctx.state.session = session;
  session.onRevoked(() => {
    if (ctx.respond === false || ctx.res.headersSent || !ctx.req.complete) ctx.req.socket.destroy();
  });
}

/** After the chain (`failure`: what it threw): the answer goes, or the revocation's 401 instead. */
export function finishKeySession(ctx: AppContext, session: OpenSession, failure?: { err: unknown }): void | Promise<void> {
  // An answer in one piece waits for a check that is due (a loaded replica's can be late), but
  // not for Redis to come back.
  const answerable = session.answerable();
  if (typeof answerable === 'boolean') return conclude(ctx, session, !answerable, failure);
  return answerable.then((ok) => conclude(ctx, session, !ok, failure));
}

function conclude(ctx: AppContext, session: OpenSession, revoked: boolean, failure: { err: unknown } | undefined): void {
  releaseOnceAnswered(ctx, session);
  if (revoked) {
    // An answer its handler writes itself, begun after the revocation and not ended by it, is cut
    // off (a WebSocket's route closes it itself).
    if ((ctx.respond === false || ctx.res.headersSent) && !ctx.res.writableEnded && ctx.status !== 101) ctx.req.socket.destroy();
    throw new ApiError('invalid_credential', REVOKED_DETAIL);
  }
  if (failure) throw failure.err;
}

/** Runs `next` as one of the key's open requests (startKeySession, then finishKeySession). */
export async function holdKeySession(ctx: AppContext, session: OpenSession, next: Next): Promise<void> {
  startKeySession(ctx, session);
  let failure: { err: unknown } | undefined;
  try {
    await next();
  } catch (err) {
    failure = { err };
  }
  await finishKeySession(ctx, session, failure);
}

/** A whole body goes out as this returns; a streamed answer holds the key's request until it is over. */
function releaseOnceAnswered(ctx: AppContext, session: OpenSession): void {
  if (ctx.respond !== false && !(ctx.body instanceof Stream)) return session.release();
  const release = whenAnswerEnds(ctx, () => session.release());
  if (ctx.req.socket.destroyed) release();
}
