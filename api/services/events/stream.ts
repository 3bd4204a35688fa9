import { PassThrough } from 'node:stream';
import { presentEvent } from '../../../shared/events/types.ts';
import type { Pool } from 'pg';
import type { Config } from '../../../shared/config.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { AppContext } from '../../context.ts';
import type { EventHub } from './hub.ts';
import { eventsAfter, type StoredEvent } from '../../../shared/repositories/events.ts';
import { confirmedStream, drained } from '../streaming.ts';

const PAGE = 100;
// PostgreSQL is read this often even with no ring from Redis (a lost message costs this much).
const POLL_MS = 5000;
// A comment line this often keeps proxies from closing an idle stream.
const HEARTBEAT_MS = 15_000;

/** One Server-Sent Events frame: id is the event id (the client's Last-Event-ID on resume). */
export function frameOf(e: StoredEvent): string {
  const event = presentEvent({ id: e.id, type: e.type, createdAt: new Date(e.created_at), data: e.data });
  return `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export interface EventStreamDeps {
  /** Where the events are read, page by page. */
  pg: Pool;
  /** Rings the stream when its account's events change. */
  eventHub: EventHub;
  log: Logger;
  config: Pick<Config, 'PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS'>;
}

/**
 * Answers the account's events after `seq` as a stream, then each new one as it is recorded, until
 * the client goes, the server shuts down or the request's key is revoked. Read from PostgreSQL page
 * by page, only as fast as the client takes them: nothing is buffered beyond one page, and a client
 * that takes nothing for PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS is dropped. What is written leaves
 * only while the key is confirmed (auth/key-sessions.ts).
 */
export function streamEvents(ctx: AppContext, deps: EventStreamDeps, accountId: string, seq: string): void {
  const session = ctx.state.session;
  const out = new PassThrough();
  const handle = deps.eventHub.open(accountId, () => out.end());
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setNoDelay(true);
  ctx.status = 200;
  ctx.type = 'text/event-stream';
  ctx.set('X-Accel-Buffering', 'no');
  const confirmed = confirmedStream(session);
  ctx.body = out.pipe(confirmed);
  let open = true;
  out.on('close', () => {
    open = false;
    handle.release();
  });
  ctx.res.on('close', () => out.destroy());
  // A revoked key's stream ends at once: what waits in it is dropped, what is on the wire ends whole.
  session?.onRevoked(() => {
    open = false;
    confirmed.unpipe(ctx.res);
    out.destroy();
    confirmed.destroy();
    if (!ctx.res.writableEnded) ctx.res.end();
  });
  out.write('retry: 2000\n\n');
  void pump(deps, accountId, seq, out, handle, () => open).catch((err: unknown) => {
    deps.log.warn({ err: (err as Error).message, accountId }, 'event stream ended on an error');
    out.destroy();
  });
}

async function pump(
  deps: EventStreamDeps,
  accountId: string,
  start: string,
  out: PassThrough,
  handle: { changed(ms: number): Promise<void> },
  isOpen: () => boolean,
): Promise<void> {
  let cursor = start;
  let lastWrite = Date.now();
  while (isOpen()) {
    const rows = await eventsAfter(deps.pg, accountId, cursor, PAGE).catch(() => [] as StoredEvent[]);
    for (const row of rows) {
      if (!isOpen()) return;
      if (!out.write(frameOf(row))) await drained(out, deps.config.PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS * 1000, () => undefined);
      cursor = row.seq;
      lastWrite = Date.now();
    }
    if (rows.length === PAGE) continue;
    await handle.changed(POLL_MS);
    if (isOpen() && Date.now() - lastWrite >= HEARTBEAT_MS) {
      out.write(': keep-alive\n\n');
      lastWrite = Date.now();
    }
  }
}
