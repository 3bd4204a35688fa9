import { AccountsAndKeys } from './20261121000001_accounts_and_keys.ts';
import { Sandboxes } from './20261121000002_sandboxes.ts';
import { AllowlistsAndSecrets } from './20261121000003_allowlists_and_secrets.ts';
import { ApiKeyScopes } from './20261122000004_api_key_scopes.ts';
import { Events } from './20261123000001_events.ts';
import { SandboxPages } from './20261123000002_sandbox_pages.ts';
import { UsageRollups } from './20261123000003_usage_rollups.ts';
import { WarmPool } from './20261123000004_warm_pool.ts';
import { SandboxDeployment } from './20261124000001_sandbox_deployment.ts';
import { SecretVersions } from './20261126000001_secret_versions.ts';
import { WebhookRefusalsUnnamed } from './20261127000001_webhook_refusals_unnamed.ts';
import { Previews } from './20261128000001_previews.ts';
import { Snapshots } from './20261129000001_snapshots.ts';
import { FinalSnapshots } from './20261129000002_final_snapshots.ts';
import { SandboxNetwork } from './20261129000003_sandbox_network.ts';
import { BrokeredSecrets } from './20261129000004_brokered_secrets.ts';

// Applied in this order; a migration, once released, is never edited: add a new one.
export const migrationsList = [
  { name: '20261121000001_accounts_and_keys', class: AccountsAndKeys },
  { name: '20261121000002_sandboxes', class: Sandboxes },
  { name: '20261121000003_allowlists_and_secrets', class: AllowlistsAndSecrets },
  { name: '20261122000004_api_key_scopes', class: ApiKeyScopes },
  { name: '20261123000001_events', class: Events },
  { name: '20261123000002_sandbox_pages', class: SandboxPages },
  { name: '20261123000003_usage_rollups', class: UsageRollups },
  { name: '20261123000004_warm_pool', class: WarmPool },
  { name: '20261124000001_sandbox_deployment', class: SandboxDeployment },
  { name: '20261126000001_secret_versions', class: SecretVersions },
  { name: '20261127000001_webhook_refusals_unnamed', class: WebhookRefusalsUnnamed },
  { name: '20261128000001_previews', class: Previews },
  { name: '20261129000001_snapshots', class: Snapshots },
  { name: '20261129000002_final_snapshots', class: FinalSnapshots },
  { name: '20261129000003_sandbox_network', class: SandboxNetwork },
  { name: '20261129000004_brokered_secrets', class: BrokeredSecrets },
];
