import type { SecretRow } from '../services/secrets.ts';

/** Name, scope, time and how it is brokered only: no route ever answers a secret's value. */
export function presentSecret(row: SecretRow) {
  const { inject } = row;
  return {
    name: row.name,
    sandboxId: row.sandbox_id,
    createdAt: new Date(row.created_at).toISOString(),
    inject: inject && { hosts: inject.hosts, header: inject.header, format: inject.format },
  };
}
