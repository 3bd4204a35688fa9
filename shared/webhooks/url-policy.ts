import { isIP } from 'node:net';
import { refusedAddressReason } from './addresses.ts';

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1']);
export const MAX_URL_LENGTH = 2048;

export interface WebhookTarget {
  url: URL;
  /** The host without IPv6 brackets. */
  hostname: string;
  port: number;
  tls: boolean;
  /** The development exception: http(s) to localhost or 127.0.0.1, connected to 127.0.0.1. */
  local: boolean;
}

/**
 * Checks a webhook URL without resolving it (docs/api.md, "Events and webhooks"): https, or with PADDOCK_WEBHOOK_ALLOW_LOCAL
 * (development) http or https to localhost and 127.0.0.1 only; no credentials in it; an IP
 * literal must be one a delivery may connect to. Names are checked again at every delivery, on the
 * address they resolve to then. Answers the target, or why it is refused.
 */
export function checkWebhookUrl(raw: string, allowLocal: boolean): { target: WebhookTarget } | { refused: string } {
  if (raw.length > MAX_URL_LENGTH) return { refused: `the URL is longer than ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { refused: 'not an absolute URL' };
  }
  if (url.username || url.password) return { refused: 'the URL must not carry credentials' };
  // A fully qualified name's trailing dot names the same host (`localhost.` is localhost).
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase().replace(/\.+$/, '');
  const local = allowLocal && LOCAL_HOSTS.has(hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) {
    return { refused: allowLocal ? 'the URL must be https (http only for localhost and 127.0.0.1)' : 'the URL must be https' };
  }
  if (!local) {
    if (hostname === 'localhost' || hostname.endsWith('.localhost')) return { refused: 'localhost is not allowed' };
    if (isIP(hostname)) {
      const reason = refusedAddressReason(hostname);
      if (reason) return { refused: `${hostname} is a ${reason} address` };
    }
  }
  const tls = url.protocol === 'https:';
  const port = url.port ? Number(url.port) : tls ? 443 : 80;
  return { target: { url, hostname, port, tls, local } };
}
