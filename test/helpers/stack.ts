import { after } from 'node:test';
import type { Config } from '../../shared/config.ts';
import { startApi, type RunningApi } from '../../api/server.ts';
import type { Route } from '../../api/routes/route.ts';
import { testConfig } from './config.ts';

/**
 * Starts a real API instance (real HTTP, PostgreSQL, Redis) on a free port, closed after the
 * test file. Pass a config to start a second instance sharing the first one's Redis prefix
 * and secrets, as a second replica would.
 */
export async function startTestApi(
  options: { overrides?: Record<string, string>; config?: Config; extraRoutes?: Route[] } = {},
): Promise<RunningApi> {
  const config = options.config ?? testConfig(options.overrides);
  const api = await startApi(config, { extraRoutes: options.extraRoutes });
  after(() => api.close());
  return api;
}
