import { useState } from 'react';
import { Box, Text, useInput } from 'ink';
import type { Snapshot } from '../api/types.ts';
import { bytes } from '../output/format.ts';
import { colour } from './colour.ts';
import { h } from './h.ts';
import type { PickerApi } from './picker-api.ts';
import { useLoaded } from './use-loaded.ts';
import { visible } from './visible.ts';

/** The newest snapshots offered: a chooser, not a listing (`paddock snapshot ls` has them all). */
const SHOWN = 50;

export interface SnapshotChooserProps {
  api: PickerApi;
  /** A ready snapshot chosen to start a session from. */
  onChoose: (snapshotId: string) => void;
  onBack: () => void;
}

/** The account's snapshots, newest first: enter starts a session from a ready one, esc goes back. */
export function SnapshotChooser({ api, onChoose, onBack }: SnapshotChooserProps) {
  const { value: snapshots, error } = useLoaded<Snapshot[]>(() => api.listSnapshots({ limit: SHOWN }), [api]);
  const [selected, setSelected] = useState(0);

  const list = snapshots ?? [];
  useInput((input, key) => {
    if (key.escape || input === 'q') return onBack();
    if (key.upArrow || input === 'k') setSelected((i) => Math.max(0, i - 1));
    else if (key.downArrow || input === 'j') setSelected((i) => Math.min(list.length - 1, i + 1));
    else if (key.return && list[selected]?.status === 'ready') onChoose(list[selected]!.id);
  });

  if (error) return h(Text, { color: colour('red'), wrap: 'wrap' }, `Snapshots could not be loaded: ${error}`);
  if (!snapshots) return h(Text, { dimColor: true }, 'Loading snapshots…');
  if (snapshots.length === 0) return h(Text, { dimColor: true }, "No snapshots: a session's actions take one.");
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { bold: true }, 'Start a session from a snapshot'),
    ...snapshots.map((s, i) =>
      h(
        Text,
        { key: s.id, inverse: i === selected, dimColor: s.status !== 'ready' },
        `${i === selected ? '>' : ' '} ${s.id}  ${visible(s.name ?? '-').slice(0, 24).padEnd(24)}  ${s.status.padEnd(7)}  ${bytes(s.sizeBytes).padStart(9)}  from ${s.sandboxId}`,
      ),
    ),
  );
}
