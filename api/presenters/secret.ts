import type { SecretRow } from '../services/secrets.ts';

/** Name, scope and time only: no route ever answers a secret's value. */
export function presentSecret(row: SecretRow) {
  return { name: row.name, sandboxId: row.sandbox_id, createdAt: new Date(row.created_at).toISOString() };
}
