import { createHash, timingSafeEqual } from 'node:crypto';

/** Whether two secrets are equal, in a time that tells nothing of where they differ or of their lengths. */
export function sameSecret(a: string, b: string): boolean {
  // Hashed first, so the comparison is constant-time whatever the lengths.
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
