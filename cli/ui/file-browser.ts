import { posix } from 'node:path';
import { useCallback, useEffect, useState } from 'react';
import { Box, Text, useInput } from 'ink';
import type { DirEntry, FileView } from '../api/types.ts';
import { describeError } from '../output/error.ts';
import { bytes } from '../output/format.ts';
import { h } from './h.ts';
import type { PickerApi } from './picker-api.ts';
import { colour } from './colour.ts';
import { visible } from './visible.ts';

export interface FileBrowserProps {
  api: PickerApi;
  sessionId: string;
  onBack: () => void;
  /** Rows shown at once. */
  height?: number;
}

/** A window of `height` rows around `selected`. */
function windowOf(length: number, selected: number, height: number): [number, number] {
  const start = Math.max(0, Math.min(selected - Math.floor(height / 2), length - height));
  return [start, Math.min(length, start + height)];
}

/**
 * The session's files: up and down to move, enter opens a directory or shows a file, left or
 * backspace goes up a directory (or back from a file), esc goes back to the sessions.
 */
export function FileBrowser({ api, sessionId, onBack, height = 15 }: FileBrowserProps) {
  const [dir, setDir] = useState('/workspace');
  const [entries, setEntries] = useState<DirEntry[] | undefined>(undefined);
  const [selected, setSelected] = useState(0);
  const [file, setFile] = useState<FileView | undefined>(undefined);
  const [scroll, setScroll] = useState(0);
  const [error, setError] = useState<string | undefined>(undefined);

  const load = useCallback(
    async (path: string) => {
      try {
        const listing = await api.listDir(sessionId, path);
        const sorted = [...listing.entries].sort((a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name));
        setDir(listing.path);
        setEntries(sorted);
        setSelected(0);
        setError(undefined);
      } catch (err) {
        const d = describeError(err);
        setError(`${d.message}${d.code ? ` [${d.code}]` : ''}`);
        setEntries((old) => old ?? []);
      }
    },
    [api, sessionId],
  );

  useEffect(() => {
    void load('/workspace');
  }, [load]);

  const open = async (entry: DirEntry) => {
    const path = posix.join(dir, entry.name);
    if (entry.type === 'dir') return load(path);
    try {
      setFile(await api.viewFile(sessionId, { path, endLine: 2000 }));
      setScroll(0);
      setError(undefined);
    } catch (err) {
      const d = describeError(err);
      setError(`${d.message}${d.code ? ` [${d.code}]` : ''}`);
    }
  };

  useInput((input, key) => {
    if (file) {
      const total = (file.content ?? '').replace(/\n$/, '').split('\n').length;
      if (key.upArrow || input === 'k') setScroll((s) => Math.max(0, s - 1));
      else if (key.downArrow || input === 'j') setScroll((s) => Math.min(Math.max(0, total - height), s + 1));
      else if (key.escape || key.leftArrow || key.backspace || key.delete || input === 'q') setFile(undefined);
      return;
    }
    const list = entries ?? [];
    if (key.upArrow || input === 'k') setSelected((i) => Math.max(0, i - 1));
    else if (key.downArrow || input === 'j') setSelected((i) => Math.min(list.length - 1, i + 1));
    else if (key.return || key.rightArrow) {
      const entry = list[selected];
      if (entry) void open(entry);
    } else if (key.leftArrow || key.backspace || key.delete) {
      if (dir !== '/') void load(posix.dirname(dir));
    } else if (key.escape || input === 'q') onBack();
  });

  const errorLine = error ? h(Text, { color: colour('red') }, error) : null;
  if (file) {
    const lines = file.content !== undefined ? file.content.replace(/\n$/, '').split('\n') : [`(binary content, ${bytes(file.size)})`];
    return h(
      Box,
      { flexDirection: 'column' },
      h(Text, { bold: true }, `${visible(file.path)}  (${file.totalLines} ${file.totalLines === 1 ? 'line' : 'lines'}, ${bytes(file.size)})`),
      // One row a line, however long: a wrapped line would push the frame past the screen.
      h(Box, { flexDirection: 'column', borderStyle: 'single', paddingX: 1 }, ...lines.slice(scroll, scroll + height).map((l, i) => h(Text, { key: i, wrap: 'truncate-end' }, visible(l) || ' '))),
      errorLine,
    );
  }
  const list = entries ?? [];
  const [from, to] = windowOf(list.length, selected, height);
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { bold: true }, `${sessionId}:${visible(dir)}`),
    entries === undefined
      ? h(Text, { dimColor: true }, 'Loading…')
      : list.length === 0
        ? h(Text, { dimColor: true }, '(empty)')
        : h(
            Box,
            { flexDirection: 'column' },
            ...list.slice(from, to).map((e, j) => {
              const i = from + j;
              const name = visible(e.type === 'dir' ? `${e.name}/` : e.name);
              return h(Text, { key: e.name, inverse: i === selected, wrap: 'truncate-end' }, `${i === selected ? '>' : ' '} ${name.padEnd(32)} ${e.type === 'dir' ? '' : bytes(e.size)}`);
            }),
          ),
    errorLine,
  );
}
