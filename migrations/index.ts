import { AccountsAndKeys } from './20261121000001_accounts_and_keys.ts';

// Applied in this order; a migration, once released, is never edited: add a new one.
export const migrationsList = [{ name: '20261121000001_accounts_and_keys', class: AccountsAndKeys }];
