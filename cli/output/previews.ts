import type { CreatedPreview, PreviewSummary } from '../api/types.ts';
import { table } from './format.ts';

export function previewTable(list: PreviewSummary[]): string {
  return table(
    ['PORT', 'ACCESS', 'TOKEN EXPIRES', 'URL'],
    list.map((p) => [String(p.port), p.public ? 'public' : 'private', p.expiresAt, p.url]),
  );
}

/** What a new preview is, for the person (stderr): the address, who may open it, the token. */
export function describeCreatedPreview(p: CreatedPreview, sessionId: string): string {
  if (p.public) return `Port ${p.port} of ${sessionId} is public at ${p.url}: anyone with the address reaches it.`;
  return [
    `Port ${p.port} of ${sessionId} is previewed at ${p.url} (private).`,
    `The address printed carries a token: opened in a browser, it lets that browser in until ${p.expiresAt}.`,
    `Programs send the token as a header instead: X-Paddock-Preview-Token: ${p.token}`,
  ].join('\n');
}
