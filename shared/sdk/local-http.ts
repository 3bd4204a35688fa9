// The few parts of node:http and node:https a preview's fetch uses where fetch cannot go (a Host of
// its own on a connection dialled elsewhere), typed here and imported only when one runs: the SDK
// is built without Node's types and also loads where there is no node:http (a browser, a worker).

/** A lookup as net.connect calls it: one address, or every one when `all` (Node's happy eyeballs). */
export type LocalLookup = (
  hostname: string,
  options: { all?: boolean },
  callback: (err: Error | null, address: string | { address: string; family: number }[], family?: number) => void,
) => void;

export interface LocalRequestOptions {
  hostname: string;
  port: number;
  path: string;
  method: string;
  headers: Record<string, string>;
  lookup: LocalLookup;
  /** false: a connection of the request's own, closed after it. */
  agent: false;
  signal?: AbortSignal;
}

export interface LocalIncomingMessage {
  statusCode?: number;
  statusMessage?: string;
  /** Names and values, alternately, as they came. */
  rawHeaders: string[];
  on(event: 'data', listener: (chunk: Uint8Array) => void): this;
  on(event: 'end' | 'close', listener: () => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  pause(): this;
  resume(): this;
  destroy(err?: Error): this;
}

export interface LocalClientRequest {
  on(event: 'response', listener: (res: LocalIncomingMessage) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  once(event: 'drain' | 'close', listener: () => void): this;
  off(event: 'drain' | 'close', listener: () => void): this;
  write(chunk: Uint8Array): boolean;
  end(chunk?: Uint8Array): this;
  destroy(err?: Error): this;
}

export interface LocalHttp {
  request(options: LocalRequestOptions): LocalClientRequest;
}

/**
 * node:http or node:https. Each specifier is cast to string, so that the SDK's build (without Node's
 * types) leaves it unresolved, while it stays a literal that bundlers and the image check follow.
 */
export async function localHttp(protocol: string): Promise<LocalHttp> {
  if (protocol === 'https:') return (await import('node:https' as string)) as LocalHttp;
  return (await import('node:http' as string)) as LocalHttp;
}
