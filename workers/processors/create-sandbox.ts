import { UnrecoverableError, type Job } from 'bullmq';
import { parsePayload } from '../../shared/jobs/catalogue.ts';
import { PermanentRuntimeError } from '../../shared/runtime/types.ts';
import type { SandboxLifecycle } from '../../shared/sandboxes/lifecycle.ts';

/** What the create job needs: the workers' half of the sandbox's life (shared/sandboxes/lifecycle.ts). */
export interface CreateJobDeps {
  sandboxes: SandboxLifecycle;
}

/** Starts the runtime sandbox of a pending row; a sandbox that can never run is failed, and its job not retried. */
export async function createSandboxJob(job: Job, deps: CreateJobDeps): Promise<string> {
  const payload = parsePayload('create', job.data);
  const attempt = { started: job.attemptsStarted, failed: job.attemptsMade, allowed: job.opts.attempts ?? 1 };
  try {
    return await deps.sandboxes.start(payload, attempt);
  } catch (err) {
    if (err instanceof PermanentRuntimeError) throw new UnrecoverableError(err.message);
    throw err;
  }
}
