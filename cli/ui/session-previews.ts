import { Box, Text } from 'ink';
import type { PreviewSummary } from '../api/types.ts';
import { h } from './h.ts';
import type { PickerApi } from './picker-api.ts';
import { colour } from './colour.ts';
import { useLoaded } from './use-loaded.ts';
import { visible } from './visible.ts';

export interface SessionPreviewsProps {
  api: PickerApi;
  sessionId: string;
}

/** The session's previewed ports and their URLs (never a token), loaded when shown. */
export function SessionPreviews({ api, sessionId }: SessionPreviewsProps) {
  const { value: previews, error } = useLoaded<PreviewSummary[]>(() => api.listPreviews(sessionId), [api, sessionId]);

  if (error) return h(Text, { color: colour('red'), wrap: 'wrap' }, `Previews could not be loaded: ${error}`);
  if (!previews) return h(Text, { dimColor: true }, 'Loading previews…');
  if (previews.length === 0) return h(Text, { dimColor: true }, 'No previews (`paddock preview <port>` makes one).');
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { bold: true }, 'Previews'),
    ...previews.map((p) => h(Text, { key: String(p.port) }, `  ${String(p.port).padEnd(5)}  ${p.public ? 'public ' : 'private'}  ${visible(p.url)}`)),
  );
}
