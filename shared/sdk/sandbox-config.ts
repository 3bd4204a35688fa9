import { PaddockClient } from './client.ts';
import { PaddockError } from './errors.ts';

/** Where the handle finds the API and its key; each falls back to its environment variable. */
export interface ConnectionOpts {
  /** An API key (pdk_live_…); default `process.env.PADDOCK_API_KEY`. */
  apiKey?: string;
  /** e.g. https://paddock.example.com (http:// only for localhost); default `process.env.PADDOCK_BASE_URL`. */
  baseUrl?: string;
}

/** The handle was given no API key or no base address, neither as an argument nor in the environment. */
export class MissingConfigError extends PaddockError {
  override name = 'MissingConfigError';
  /** `missing_api_key` or `missing_base_url`. */
  readonly code: 'missing_api_key' | 'missing_base_url';
  /** Never answered by the API: always undefined. */
  readonly status: undefined = undefined;
  constructor(code: 'missing_api_key' | 'missing_base_url', message: string) {
    super(message);
    this.code = code;
  }
}

function env(name: string): string | undefined {
  // globalThis.process: the SDK also loads where there is no process (a browser, a worker).
  const value = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
  return value?.trim() || undefined;
}

/** A client from the arguments, else the environment; the base address is held to checkBaseUrl's https rule. */
export function clientFrom(opts: ConnectionOpts = {}): PaddockClient {
  const apiKey = opts.apiKey ?? env('PADDOCK_API_KEY');
  if (!apiKey) throw new MissingConfigError('missing_api_key', 'No API key: pass { apiKey } or set PADDOCK_API_KEY.');
  const baseUrl = opts.baseUrl ?? env('PADDOCK_BASE_URL');
  if (!baseUrl) throw new MissingConfigError('missing_base_url', 'No base address: pass { baseUrl } or set PADDOCK_BASE_URL, e.g. https://paddock.example.com.');
  return new PaddockClient({ apiKey, baseUrl });
}
