import { z } from 'zod';
import { EVENT_TYPES } from '../../../shared/events/types.ts';
import { listOf, timestamp } from '../common-schemas.ts';

export const EventId = z.string().max(100);

export const ListEventsQuery = z.strictObject({
  after: EventId.optional().meta({
    description: 'Only events after this one (evt_…), oldest first. A stream resumes from Last-Event-ID instead when it is sent.',
  }),
  limit: z.coerce.number().int().min(1).max(1000).default(100).meta({ description: 'At most this many events (the list; a stream sends all)' }),
});

export const EventObject = z.object({
  id: z.string().meta({ description: 'evt_…' }),
  type: z.enum(EVENT_TYPES),
  createdAt: timestamp,
  data: z.record(z.string(), z.unknown()).meta({
    description:
      'sandbox.*: {sandbox} as it was right after the transition (sandbox.destroyed carries its destroyReason); ' +
      'usage.threshold: {threshold: 80|100, usage: {sandboxHours: {used, limit}}, period: {start, end}}; ' +
      'webhook.disabled: {webhook: {id, url, disabledAt, lastEventId}}; webhook.test: {webhook: {id}}',
  }),
});

export const EventList = listOf(EventObject);

export const EventStream = z.string().meta({
  description:
    'Server-Sent Events: one event per frame, "id:" the event id, "event:" its type, "data:" the event object. ' +
    'Without a cursor (after or Last-Event-ID) the stream starts with the next event; it resumes after Last-Event-ID.',
});
