import type { Logger } from './logger.ts';

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits 0; a second signal, or a stop that outlasts
 * the timeout, exits at once with 1 so an orchestrator is never left waiting.
 */
export function onShutdownSignal(log: Logger, timeoutSeconds: number, stop: () => Promise<void>, steps?: ShutdownSteps): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      log.error(steps ? { waitingFor: steps.pending() } : {}, 'shutdown timed out');
      process.exit(1);
    }, (timeoutSeconds + 5) * 1000);
    timer.unref();
    stop().then(
      () => {
        log.info('stopped');
        exitFlushed(log, 0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        exitFlushed(log, 1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** The steps of a shutdown under way: what one that timed out was still waiting for, for its log line. */
export class ShutdownSteps {
  readonly #pending = new Set<string>();

  async run<T>(name: string, step: Promise<T>): Promise<T> {
    this.#pending.add(name);
    try {
      return await step;
    } finally {
      this.#pending.delete(name);
    }
  }

  pending(): string[] {
    return [...this.#pending];
  }
}

/** Exits; the log lines are out already (the logger writes synchronously: shared/logger.ts). */
function exitFlushed(log: Logger, code: number): void {
  try {
    log.flush();
  } finally {
    process.exit(code);
  }
}
