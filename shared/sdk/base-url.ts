import { InsecureBaseUrlError } from './errors.ts';

/** The only hosts a credential may travel to over plain http: this machine. */
const CLEARTEXT_HOSTS = new Set(['localhost', '127.0.0.1']);

/**
 * Checks a base address against the https rule and answers it normalised (no trailing slash).
 * An API key is a full-privilege, long-lived credential, so it must never travel in cleartext:
 * http:// is refused unless the host is localhost or 127.0.0.1.
 */
export function checkBaseUrl(input: string): string {
  const raw = input.trim();
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InsecureBaseUrlError(raw, `"${raw}" is not a valid URL: give a base address such as https://paddock.example.com.`);
  }
  if (url.protocol === 'http:') {
    if (!CLEARTEXT_HOSTS.has(url.hostname)) {
      throw new InsecureBaseUrlError(
        raw,
        `Refusing ${raw}: an API key is a full-privilege, long-lived credential and must not travel in cleartext. ` +
          'Use an https:// address (plain http:// is allowed only for localhost and 127.0.0.1).',
      );
    }
  } else if (url.protocol !== 'https:') {
    throw new InsecureBaseUrlError(raw, `Refusing ${raw}: the base address must start with https:// (or http:// for localhost).`);
  }
  if (url.username || url.password) {
    throw new InsecureBaseUrlError(raw, `Refusing ${raw}: the base address must not carry a user name or password.`);
  }
  if (url.search || url.hash) {
    throw new InsecureBaseUrlError(raw, `Refusing ${raw}: the base address must not have a query or fragment.`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
