import { checkBaseUrl } from '../api/index.ts';
import { readConfigFile } from './file.ts';
import { configPath } from './path.ts';

export type Source = 'env' | 'file' | 'none';

/** The settings in effect: the environment overrides the file. */
export interface ResolvedConfig {
  path: string;
  baseUrl: string | undefined;
  baseUrlSource: Source;
  apiKey: string | undefined;
  apiKeySource: Source;
}

export function resolveConfig(env: NodeJS.ProcessEnv = process.env): ResolvedConfig {
  const path = configPath(env);
  const file = readConfigFile(path);
  const envUrl = env.PADDOCK_BASE_URL || undefined;
  const envKey = env.PADDOCK_API_KEY || undefined;
  return {
    path,
    baseUrl: envUrl ?? file.base_url,
    baseUrlSource: envUrl ? 'env' : file.base_url ? 'file' : 'none',
    apiKey: envKey ?? file.api_key,
    apiKeySource: envKey ? 'env' : file.api_key ? 'file' : 'none',
  };
}

/** The base address in effect, checked against the https rule however it was set. */
export function checkedBaseUrl(config: ResolvedConfig): string | undefined {
  return config.baseUrl === undefined ? undefined : checkBaseUrl(config.baseUrl);
}

/** What every API key looks like (its secret part is letters and digits only). */
export const KEY_SHAPE = /^[a-z]+_live_[A-Za-z0-9]+$/;

/** `pdk_live_abcd…wxyz`: enough to recognise a key, not enough to use it. */
export function maskKey(key: string): string {
  const m = /^([a-z]+_live_)(.*)$/.exec(key);
  const prefix = m ? m[1]! : '';
  const secret = m ? m[2]! : key;
  if (secret.length <= 8) return `${prefix}${'*'.repeat(secret.length)}`;
  return `${prefix}${secret.slice(0, 4)}…${secret.slice(-4)}`;
}
