import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StoreEvent } from './types.ts';

/** What a watch reads: pods (store.ts), or the objects kept as given (objects.ts). */
export interface Watchable<T extends { metadata: { namespace: string } }> {
  readonly currentVersion: number;
  list(namespace: string, matches: (object: T) => boolean): T[];
  eventsSince(since: number): StoreEvent<T>[] | undefined;
  subscribe(listener: (event: StoreEvent<T>) => void): () => void;
}

/**
 * `?watch=true`: newline-delimited WatchEvents on one long response. Without a resourceVersion
 * (or with "0") it starts with an ADDED per existing object, as the API server does; with one, it
 * replays what happened since, or sends a 410 Expired ERROR event when that is out of the window.
 */
export function serveWatch<T extends { metadata: { namespace: string } }>(
  req: IncomingMessage,
  res: ServerResponse,
  store: Watchable<T>,
  namespace: string,
  matches: (object: T) => boolean,
  query: URLSearchParams,
  openWatches: Set<ServerResponse>,
): void {
  const selected = (object: T) => object.metadata.namespace === namespace && matches(object);
  const send = (type: string, object: unknown) => res.write(`${JSON.stringify({ type, object })}\n`);
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
  res.flushHeaders();

  const since = query.get('resourceVersion');
  if (!since || since === '0') {
    for (const object of store.list(namespace, matches)) send('ADDED', object);
  } else {
    const missed = store.eventsSince(Number(since));
    if (missed === undefined) {
      send('ERROR', {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `too old resource version: ${since} (${store.currentVersion})`,
        reason: 'Expired',
        code: 410,
      });
      res.end();
      return;
    }
    for (const event of missed) if (selected(event.object)) send(event.type, event.object);
  }

  // Subscribing in the same tick as the replay: no event can fall between the two.
  const unsubscribe = store.subscribe((event: StoreEvent<T>) => {
    if (selected(event.object)) send(event.type, event.object);
  });
  openWatches.add(res);
  const timeoutSeconds = Number(query.get('timeoutSeconds'));
  const timer = timeoutSeconds > 0 ? setTimeout(() => res.end(), timeoutSeconds * 1000) : undefined;
  const stop = () => {
    clearTimeout(timer);
    unsubscribe();
    openWatches.delete(res);
  };
  res.on('close', stop);
  req.on('close', stop);
}
