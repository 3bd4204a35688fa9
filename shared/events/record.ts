// The outbox's statements live with the events' other SQL (shared/repositories/events.ts).
export { eventsLockStatement, eventsStatement, recordedFrom, recordEvent, type NewEvent } from '../repositories/events.ts';
