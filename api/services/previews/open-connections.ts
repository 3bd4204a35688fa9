import type { Pool } from 'pg';
import type { Logger } from '../../../shared/logger.ts';
import { readPreviewAccess } from '../../../shared/repositories/previews.ts';

// The connections this process holds open through previews, by sandbox and port. While any is
// open, each previewed port's standing is read again every CHECK_MS: once the preview is revoked
// or the sandbox no longer runs, whichever replica did that, its connections here are closed.

const CHECK_MS = 1000;

export class OpenPreviewConnections {
  readonly #pg: Pool;
  readonly #log: Logger;
  readonly #byPort = new Map<string, Set<() => void>>();
  #timer: NodeJS.Timeout | undefined;
  #checking = false;

  constructor(pg: Pool, log: Logger) {
    this.#pg = pg;
    this.#log = log;
  }

  /** Holds `close` for the port's connection; the answer forgets it. */
  track(target: { sandboxId: string; port: number }, close: () => void): () => void {
    const key = `${target.sandboxId}:${target.port}`;
    const set = this.#byPort.get(key) ?? new Set();
    set.add(close);
    this.#byPort.set(key, set);
    this.#timer ??= setInterval(() => void this.#check(), CHECK_MS).unref();
    return () => {
      set.delete(close);
      if (!set.size && this.#byPort.get(key) === set) this.#byPort.delete(key);
      if (!this.#byPort.size) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  closeAll(): void {
    for (const set of [...this.#byPort.values()]) for (const close of [...set]) close();
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #check(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      for (const [key, set] of [...this.#byPort]) {
        const [sandboxId, port] = key.split(':') as [string, string];
        const access = await readPreviewAccess(this.#pg, sandboxId, Number(port), undefined);
        if (!access.running || !access.previewed) for (const close of [...set]) close();
      }
    } catch (err) {
      this.#log.warn({ err }, 'could not check the open previews; checking again shortly');
    } finally {
      this.#checking = false;
    }
  }
}
