import { AccountsAndKeys } from './20261121000001_accounts_and_keys.ts';
import { Sandboxes } from './20261121000002_sandboxes.ts';
import { AllowlistsAndSecrets } from './20261121000003_allowlists_and_secrets.ts';

// Applied in this order; a migration, once released, is never edited: add a new one.
export const migrationsList = [
  { name: '20261121000001_accounts_and_keys', class: AccountsAndKeys },
  { name: '20261121000002_sandboxes', class: Sandboxes },
  { name: '20261121000003_allowlists_and_secrets', class: AllowlistsAndSecrets },
];
