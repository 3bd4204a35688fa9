import type { AppContext } from '../context.ts';

/**
 * Runs `done` once, when the answer is all written or its client has gone: whichever comes first
 * of the answer's 'finish', its 'close' (the connection ended before it was all written: no
 * 'finish' will come) and the socket's 'close'. Returns that same call, for a caller that learns
 * the socket is gone before any of those can fire.
 */
export function whenAnswerEnds(ctx: AppContext, done: () => void): () => void {
  const socket = ctx.req.socket;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    // A keep-alive socket serves many requests: each takes its listener off again.
    socket.off('close', end);
    ctx.res.off('finish', end);
    ctx.res.off('close', end);
    done();
  };
  ctx.res.once('finish', end);
  ctx.res.once('close', end);
  socket.once('close', end);
  return end;
}
