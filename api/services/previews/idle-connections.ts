// Connections through previews with nothing moving either way for the idle timeout are closed: a
// silent program, a client that stopped reading, a WebSocket nobody speaks on. Timed by the
// client's socket, whose byte counts move whenever bytes move between client and program (each
// hop holds no more than its window), on both runtimes (a Kubernetes port-forward stream has no
// timer of its own); and read, never set, as the server keeps its own timers on that socket.

export interface ByteCounted {
  readonly bytesRead: number;
  readonly bytesWritten: number;
}

interface Watched {
  socket: ByteCounted;
  onIdle: () => void;
  bytes: number;
  since: number;
}

/** Checks per idle timeout: a connection is closed within 1/CHECKS past its timeout. */
const CHECKS = 10;

export class IdleConnections {
  readonly #idleMs: number;
  readonly #watched = new Set<Watched>();
  #timer: NodeJS.Timeout | undefined;

  constructor(idleMs: number) {
    this.#idleMs = idleMs;
  }

  /** Calls `onIdle` once when nothing has moved on `socket` for the idle timeout; the answer stops watching. */
  watch(socket: ByteCounted, onIdle: () => void): () => void {
    const entry: Watched = { socket, onIdle, bytes: moved(socket), since: Date.now() };
    this.#watched.add(entry);
    this.#timer ??= setInterval(() => this.#check(), Math.max(100, Math.floor(this.#idleMs / CHECKS))).unref();
    return () => this.#forget(entry);
  }

  #forget(entry: Watched): void {
    this.#watched.delete(entry);
    if (!this.#watched.size) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #check(): void {
    const now = Date.now();
    for (const entry of [...this.#watched]) {
      const bytes = moved(entry.socket);
      if (bytes !== entry.bytes) {
        entry.bytes = bytes;
        entry.since = now;
      } else if (now - entry.since >= this.#idleMs) {
        this.#forget(entry);
        entry.onIdle();
      }
    }
  }
}

function moved(socket: ByteCounted): number {
  return (socket.bytesRead ?? 0) + (socket.bytesWritten ?? 0);
}
