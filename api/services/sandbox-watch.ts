import type { QueueEvents } from 'bullmq';
import type { SandboxWatch, SandboxWatcher } from '../../shared/sandboxes/ports.ts';
import type { EventHub } from './events/hub.ts';

/**
 * What a request waiting for a sandbox hears, on any replica: the account's ring (the sandbox's
 * transitions, rung by whichever process committed them) and the end of the job waited for
 * (a failed attempt ends a wait with no transition to ring).
 */
export function sandboxWatcher(eventHub: EventHub, queueEvents: QueueEvents): SandboxWatcher {
  return {
    watch(accountId: string, sandboxId: string, jobId: string): SandboxWatch {
      let finished = false;
      let wake: (() => void) | undefined;
      const onFinished = (event: { jobId: string }) => {
        if (event.jobId !== jobId) return;
        finished = true;
        wake?.();
      };
      queueEvents.on('completed', onFinished);
      queueEvents.on('failed', onFinished);
      const rung = eventHub.watch(accountId, sandboxId);
      return {
        heard: () => rung.heard(),
        jobFinished: () => finished,
        async next(ms) {
          await Promise.race([rung.changed(ms), new Promise<void>((resolve) => (wake = resolve))]);
          wake = undefined;
        },
        release() {
          rung.release();
          queueEvents.off('completed', onFinished);
          queueEvents.off('failed', onFinished);
        },
      };
    },
  };
}
