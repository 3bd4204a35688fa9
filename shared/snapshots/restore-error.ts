/** A sandbox started from a snapshot could not get its workspace back: it must not run. */
export class SnapshotRestoreError extends Error {
  override name = 'SnapshotRestoreError';
  readonly code: 'snapshot_corrupt' | 'snapshot_not_found';
  constructor(code: 'snapshot_corrupt' | 'snapshot_not_found', message: string) {
    super(message);
    this.code = code;
  }
}

/** How a failed sandbox's message begins when its snapshot was damaged: the waiting create answers 409 snapshot_corrupt. */
export const SNAPSHOT_CORRUPT_MESSAGE = 'The snapshot is damaged';
