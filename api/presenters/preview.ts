import type { PreviewRow } from '../../shared/repositories/previews.ts';
import { previewUrl } from '../../shared/previews/hosts.ts';

/** A preview as listed: never a token. `expiresAt`: when its last token made expires. */
export function presentPreview(row: PreviewRow, domain: string | undefined, apiPort: string | undefined) {
  return { port: row.port, url: previewUrl(row.sandbox_id, row.port, domain, apiPort), public: row.public, expiresAt: new Date(row.expires_at).toISOString() };
}
