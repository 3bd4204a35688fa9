import type { PaddockClient } from '../api/index.ts';
import type { CreatePreviewInput, CreatedPreview, PreviewSummary } from '../api/types.ts';

export function createPreview(client: PaddockClient, sessionId: string, input: CreatePreviewInput): Promise<CreatedPreview> {
  return client.createPreview(sessionId, input);
}

export function listPreviews(client: PaddockClient, sessionId: string): Promise<PreviewSummary[]> {
  return client.listPreviews(sessionId);
}

export function deletePreview(client: PaddockClient, sessionId: string, port: number): Promise<void> {
  return client.deletePreview(sessionId, port);
}

/** The address a person opens: a private preview's signed URL (traded for a cookie), a public one's own. */
export function browserUrl(p: CreatedPreview): string {
  return p.public ? p.url : p.signedUrl;
}
