import { ApiError } from '../../../shared/errors.ts';
import { presentEvent } from '../../../shared/events/types.ts';
import { parseInput } from '../../middleware/validate.ts';
import { eventsAfter, latestSeq } from '../../../shared/repositories/events.ts';
import { seqOf } from '../../services/events/store.ts';
import { streamEvents } from '../../services/events/stream.ts';
import { accountIdOf, route } from '../route.ts';
import { EventId, EventList, EventStream, ListEventsQuery } from './schema.ts';


export const listEvents = route(
  {
    method: 'get',
    path: '/v1/events',
    operationId: 'listEvents',
    summary:
      "The account's events, oldest first (kept PADDOCK_EVENT_RETENTION_DAYS); with Accept: text/event-stream a Server-Sent Events stream that resumes from Last-Event-ID, and ends when its API key is revoked",
    tag: 'events',
    auth: 'apiKey',
    scope: 'sandboxes:read',
    bucket: 'account',
    query: ListEventsQuery,
    requestHeaders: [{ name: 'Last-Event-ID', description: 'With the event stream: resume after this event (an evt_… id), as EventSource sends it on a reconnect; takes the place of ?after=' }],
    responses: {
      200: { description: 'Events', schema: EventList, alternatives: [{ contentType: 'text/event-stream', schema: EventStream }] },
    },
    errors: ['event_not_found', 'not_acceptable'],
  },
  async (ctx, { query }, deps) => {
    const accountId = accountIdOf(ctx);
    const header = ctx.get('last-event-id');
    const cursor = header ? parseInput(EventId, header, 'header') : query.after;
    const seq = cursor ? await seqOf(deps.pg, accountId, cursor) : undefined;
    const kind = ctx.accepts('application/json', 'text/event-stream');
    if (!kind) throw new ApiError('not_acceptable', 'GET /v1/events answers application/json or text/event-stream.');
    if (kind === 'text/event-stream') {
      streamEvents(ctx, deps, accountId, seq ?? (await latestSeq(deps.pg, accountId)));
      return;
    }
    const rows = await eventsAfter(deps.pg, accountId, seq ?? '0', query.limit);
    ctx.body = { data: rows.map((e) => presentEvent({ id: e.id, type: e.type, createdAt: new Date(e.created_at), data: e.data })) };
  },
);

export const eventRoutes = [listEvents];
