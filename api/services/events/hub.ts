import type { Redis } from 'ioredis';
import type { Config } from '../../../shared/config.ts';
import type { Logger } from '../../../shared/logger.ts';
import { ApiError } from '../../../shared/errors.ts';
import { createQueueRedis } from '../../../shared/redis.ts';
import { eventsChannel } from '../../../shared/events/announce.ts';
import { parseRing, progressOf, type SandboxTransition } from '../../../shared/events/ring.ts';

export interface StreamHandle {
  /** Resolves when the account's events may have changed, or after `ms` anyway. */
  changed(ms: number): Promise<void>;
  /** Ends the registration (the stream closed). */
  release(): void;
}

export interface WaitHandle extends StreamHandle {
  /** The furthest transition of the watched sandbox that the ring has carried since the watch began. */
  heard(): SandboxTransition | undefined;
}

interface Listener {
  wake: () => void;
  end: () => void;
  dirty: boolean;
  /** An event stream (counted against the cap), not a wait of the API's own. */
  stream: boolean;
  /** A wait's sandbox, and the furthest of its transitions heard. */
  sandboxId?: string;
  heard?: SandboxTransition;
}

/**
 * This API process's open event streams. Any process that records an event publishes the account
 * id on one Redis channel; the hub, subscribed once per process (lazily, on the first stream),
 * wakes that account's streams, which then read PostgreSQL, the record. A lost message (Redis
 * restarting) costs a stream at most its poll interval. Also bounds the streams per account.
 */
/** What the hub reads of the configuration: where Redis is, its prefix, and the cap on streams. */
export type EventHubOptions = Pick<Config, 'REDIS_URL' | 'PADDOCK_REDIS_PREFIX' | 'PADDOCK_EVENT_STREAMS_PER_ACCOUNT'>;

export class EventHub {
  private readonly config: EventHubOptions;
  private readonly log: Logger;
  private subscriber: Redis | undefined;
  private readonly listeners = new Map<string, Set<Listener>>();
  private closed = false;

  constructor(config: EventHubOptions, log: Logger) {
    this.config = config;
    this.log = log;
  }

  /** Registers a stream of the account; `end` is called when the process shuts down. */
  open(accountId: string, end: () => void): StreamHandle {
    if (this.closed) throw new ApiError('service_unavailable', 'The server is shutting down; reconnect with Last-Event-ID.');
    const set = this.listeners.get(accountId) ?? new Set<Listener>();
    const cap = this.config.PADDOCK_EVENT_STREAMS_PER_ACCOUNT;
    if ([...set].filter((l) => l.stream).length >= cap) {
      throw new ApiError('too_many_in_flight', `At most ${cap} event streams per account may be open at once on one server.`, {
        headers: { 'Retry-After': '5' },
      });
    }
    return this.register(accountId, set, { end, stream: true }).handle;
  }

  /**
   * Wakes one of the API's own waits (a create or destroy with ?wait) on the account's events,
   * which the worker announces before its job's completion reaches the API. Not a stream: not
   * counted against the cap, and not ended at shutdown (the wait has its deadline).
   */
  watch(accountId: string, sandboxId: string): WaitHandle {
    const { handle, listener } = this.register(accountId, this.listeners.get(accountId) ?? new Set<Listener>(), { end: () => undefined, stream: false, sandboxId });
    return { ...handle, heard: () => listener.heard };
  }

  private register(accountId: string, set: Set<Listener>, kind: Pick<Listener, 'end' | 'stream' | 'sandboxId'>): { handle: StreamHandle; listener: Listener } {
    if (!this.closed) this.subscribe();
    const listener: Listener = { wake: () => undefined, dirty: false, ...kind };
    set.add(listener);
    this.listeners.set(accountId, set);
    const handle: StreamHandle = {
      changed: (ms) =>
        new Promise<void>((resolve) => {
          if (listener.dirty) {
            listener.dirty = false;
            resolve();
            return;
          }
          const timer = setTimeout(done, ms);
          function done() {
            clearTimeout(timer);
            listener.wake = () => undefined;
            listener.dirty = false;
            resolve();
          }
          listener.wake = done;
        }),
      release: () => {
        set.delete(listener);
        if (set.size === 0) this.listeners.delete(accountId);
      },
    };
    return { handle, listener };
  }

  /** Ends every stream (shutdown) and the subscription. */
  close(): void {
    this.closed = true;
    for (const set of this.listeners.values()) for (const l of set) l.end();
    this.listeners.clear();
    this.subscriber?.disconnect();
    this.subscriber = undefined;
  }

  private subscribe(): void {
    if (this.subscriber) return;
    const sub = createQueueRedis(this.config.REDIS_URL);
    sub.on('error', (err: Error) => this.log.warn({ err: err.message }, 'redis connection error (event streams)'));
    sub.on('message', (_channel: string, message: string) => {
      const ring = parseRing(message);
      if (!ring) return;
      for (const l of this.listeners.get(ring.accountId) ?? []) {
        for (const t of ring.sandboxes) {
          if (t.id === l.sandboxId && (!l.heard || progressOf(t) >= progressOf(l.heard))) l.heard = t;
        }
        l.dirty = true;
        l.wake();
      }
    });
    // ioredis subscribes again by itself after a reconnect.
    sub.subscribe(eventsChannel(this.config.PADDOCK_REDIS_PREFIX)).catch((err: unknown) => this.log.warn({ err }, 'event stream subscription failed'));
    this.subscriber = sub;
  }
}
