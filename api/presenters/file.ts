import type { ExtractedArchive } from '../services/files/archive.ts';
import type { EditResult } from '../services/files/edit.ts';
import type { GlobResult } from '../services/files/glob.ts';
import type { GrepResult } from '../services/files/grep.ts';
import type { PathStat } from '../services/files/stat.ts';
import type { DirListing } from '../services/files/list.ts';
import type { FileView } from '../services/files/view.ts';
import type { WrittenFile } from '../services/files/write.ts';

export function presentFileView(view: FileView) {
  return {
    path: view.path,
    ...(view.content !== undefined ? { content: view.content } : { contentBase64: view.contentBase64 ?? '' }),
    encoding: view.encoding,
    startLine: view.startLine,
    endLine: view.endLine,
    totalLines: view.totalLines,
    truncated: view.truncated,
    size: view.size,
  };
}

export function presentWrittenFile(file: WrittenFile) {
  return { path: file.path, size: file.size, overwritten: file.overwritten };
}

export function presentExtractedArchive(archive: ExtractedArchive) {
  return { path: archive.path, files: archive.files, bytes: archive.bytes };
}

export function presentEdit(edit: EditResult) {
  return { path: edit.path, replacements: edit.replacements };
}

export function presentListing(listing: DirListing) {
  return {
    path: listing.path,
    entries: listing.entries.map((e) => ({ name: e.name, type: e.type, size: e.size, modifiedAt: e.modifiedAt.toISOString() })),
    truncated: listing.truncated,
  };
}

export function presentGlob(result: GlobResult) {
  return { pattern: result.pattern, matches: result.matches, truncated: result.truncated };
}

export function presentGrep(result: GrepResult) {
  return {
    pattern: result.pattern,
    matches: result.matches.map((m) => ({ path: m.path, line: m.line, text: m.text })),
    truncated: result.truncated,
  };
}

export function presentFileStat(stat: PathStat) {
  return {
    path: stat.path,
    type: stat.type,
    size: stat.size,
    mode: stat.mode,
    modifiedAt: stat.modifiedAt.toISOString(),
    ...(stat.target !== undefined ? { target: stat.target } : {}),
  };
}
