// A preview's address: each port of each sandbox a host of its own, `<port>-<id without sbx_>.<domain>`,
// so an app's absolute paths, cookies and WebSockets work as on a domain of its own (an underscore
// is not valid in a host name). Browsers and curl resolve `*.localhost` to the loopback address.

/** The domain previews are served under when the operator names none. */
export const LOCAL_PREVIEW_DOMAIN = 'localhost';

const ID_PREFIX = 'sbx_';
const LABEL = /^([1-9][0-9]{0,4})-([0-9a-z]{24})$/;

export function previewHost(sandboxId: string, port: number, domain: string): string {
  return `${port}-${sandboxId.slice(ID_PREFIX.length)}.${domain}`;
}

/**
 * The preview's URL: https under the operator's domain; else http on `*.localhost` at the port
 * the API was reached on (`apiPort`).
 */
export function previewUrl(sandboxId: string, port: number, configured: string | undefined, apiPort: string | undefined): string {
  if (configured) return `https://${previewHost(sandboxId, port, configured)}/`;
  return `http://${previewHost(sandboxId, port, LOCAL_PREVIEW_DOMAIN)}${apiPort ? `:${apiPort}` : ''}/`;
}

/** A host under the preview domain that names no sandbox's port: never the API's either. */
export const NOT_A_PREVIEW = 'not_a_preview';

/** The sandbox and port a preview's host names. */
export interface PreviewTarget {
  sandboxId: string;
  port: number;
}

/**
 * The sandbox and port a request's Host names, when it is a preview's host under `domain`;
 * NOT_A_PREVIEW for any other host under `domain` (the wildcard record and ingress bring every
 * such host here, and none of them may reach the API's routes); undefined for the API's own.
 */
export function parsePreviewHost(host: string | undefined, domain: string): PreviewTarget | typeof NOT_A_PREVIEW | undefined {
  if (!host) return undefined;
  const name = host.toLowerCase().replace(/:[0-9]{1,5}$/, '').replace(/\.$/, '');
  const suffix = `.${domain}`;
  if (!name.endsWith(suffix)) return undefined;
  const match = name.length <= 300 ? LABEL.exec(name.slice(0, -suffix.length)) : null;
  if (!match) return NOT_A_PREVIEW;
  const port = Number(match[1]);
  if (port > 65_535) return NOT_A_PREVIEW;
  return { sandboxId: `${ID_PREFIX}${match[2]}`, port };
}
