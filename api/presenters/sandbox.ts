import type { Sandbox } from '../../shared/db/entities.ts';

export type PresentedSandbox = ReturnType<typeof presentSandbox>;

export function presentSandbox(sandbox: Sandbox) {
  return {
    id: sandbox.id,
    state: sandbox.state,
    status: sandbox.status,
    image: sandbox.image,
    createdAt: sandbox.createdAt.toISOString(),
    readyAt: sandbox.readyAt?.toISOString() ?? null,
    expiresAt: sandbox.expiresAt.toISOString(),
    destroyedAt: sandbox.destroyedAt?.toISOString() ?? null,
    destroyReason: sandbox.destroyReason ?? null,
    failureMessage: sandbox.failureMessage ?? null,
    metadata: sandbox.metadata,
  };
}
