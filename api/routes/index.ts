import type { Route } from './route.ts';
import { authRoutes } from './auth/index.ts';
import { apiKeyRoutes } from './api-keys/index.ts';
import { accountRoutes } from './account/index.ts';
import { sandboxRoutes } from './sandboxes/index.ts';
import { execRoutes } from './exec/index.ts';
import { processRoutes } from './processes/index.ts';
import { terminalRoutes } from './terminal/index.ts';
import { fileRoutes } from './files/index.ts';
import { allowlistRoutes } from './allowlist/index.ts';
import { secretRoutes } from './secrets/index.ts';
import { mcpRoutes } from './mcp/index.ts';
import { eventRoutes } from './events/index.ts';
import { webhookRoutes } from './webhooks/index.ts';
import { previewRoutes } from './previews/index.ts';
import { snapshotRoutes } from './snapshots/index.ts';

/** Every public /v1 route; the OpenAPI document is generated from this list. */
export const allRoutes: Route[] = [
  ...authRoutes,
  ...apiKeyRoutes,
  ...accountRoutes,
  ...sandboxRoutes,
  ...execRoutes,
  ...processRoutes,
  ...terminalRoutes,
  ...fileRoutes,
  ...previewRoutes,
  ...snapshotRoutes,
  ...allowlistRoutes,
  ...secretRoutes,
  ...mcpRoutes,
  ...eventRoutes,
  ...webhookRoutes,
];
