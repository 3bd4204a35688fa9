import { Stream } from 'node:stream';
import type { AppContext } from '../context.ts';

/**
 * A buffered answer (a JSON document, an error) whose client stops reading is dropped once the
 * socket has made no progress for `idleMs`: otherwise the answer's bytes, and whatever the request
 * holds until its answer is written (an in-flight lease), stay for as long as the client likes.
 * Armed once the answer is ready: computing it (a long exec) is not idleness. Streamed answers,
 * and those a handler writes itself (ctx.respond = false), pace themselves and carry their own
 * write timeout (api/services/streaming.ts).
 */
export function armWriteDeadline(ctx: AppContext, idleMs: number): void {
  if (ctx.body instanceof Stream || ctx.respond === false) return;
  ctx.res.setTimeout(idleMs, () => ctx.req.socket.destroy());
}
