import type { StoreEvent, WatchEventType } from './types.ts';

// The changes of one kind of object, as the API server keeps them for watches: each change takes
// the next resourceVersion (set on the object), a window of the latest is kept for a watch that
// resumes, and listeners (open watches) hear each as it is made.

export class EventLog<T extends { metadata: { resourceVersion?: string } }> {
  readonly #events: StoreEvent<T>[] = [];
  readonly #listeners = new Set<(event: StoreEvent<T>) => void>();
  readonly #window: number;
  #version = 0;

  /** `window`: how many events back a watch may resume from; older ones get 410 Expired. */
  constructor(window: number) {
    this.#window = window;
  }

  get currentVersion(): number {
    return this.#version;
  }

  /** The change made: the object gets its resourceVersion, and a copy goes to the log and the listeners. */
  record(type: WatchEventType, object: T): void {
    this.#version += 1;
    object.metadata.resourceVersion = String(this.#version);
    const event: StoreEvent<T> = { type, resourceVersion: this.#version, object: structuredClone(object) };
    this.#events.push(event);
    if (this.#events.length > this.#window) this.#events.shift();
    for (const listener of this.#listeners) listener(event);
  }

  /** Events after `since`, or undefined when they have left the window (the watcher relists). */
  eventsSince(since: number): StoreEvent<T>[] | undefined {
    const oldest = this.#events[0]?.resourceVersion ?? this.#version + 1;
    if (since < oldest - 1) return undefined;
    return this.#events.filter((e) => e.resourceVersion > since);
  }

  subscribe(listener: (event: StoreEvent<T>) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Every listener let go. */
  close(): void {
    this.#listeners.clear();
  }
}
