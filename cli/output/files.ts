import type { GrepResult, Listing } from '../api/types.ts';
import { table } from './format.ts';

export function listingTable(l: Listing): string {
  return table(
    ['TYPE', 'SIZE', 'MODIFIED', 'NAME'],
    l.entries.map((e) => [e.type, String(e.size), e.modifiedAt, e.type === 'dir' ? `${e.name}/` : e.name]),
  );
}

export function grepLines(r: GrepResult): string {
  return r.matches.map((m) => `${m.path}:${m.line}:${m.text}`).join('\n');
}
