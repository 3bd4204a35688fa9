import { useState } from 'react';
import { Box, Text, useInput } from 'ink';
import { h } from './h.ts';

export type SessionAction = 'shell' | 'exec' | 'files' | 'snapshot' | 'destroy' | 'back';

export const ACTIONS: { action: SessionAction; label: string }[] = [
  { action: 'shell', label: 'Open a shell' },
  { action: 'exec', label: 'Run a command' },
  { action: 'files', label: 'Browse files' },
  { action: 'snapshot', label: 'Snapshot its workspace' },
  { action: 'destroy', label: 'Destroy' },
  { action: 'back', label: 'Back' },
];

export interface ActionMenuProps {
  sessionId: string;
  onChoose: (action: SessionAction) => void;
}

/** What to do with the chosen session: arrow keys and enter; esc goes back. */
export function ActionMenu({ sessionId, onChoose }: ActionMenuProps) {
  const [selected, setSelected] = useState(0);
  useInput((input, key) => {
    if (key.upArrow || input === 'k') setSelected((i) => (i + ACTIONS.length - 1) % ACTIONS.length);
    else if (key.downArrow || input === 'j') setSelected((i) => (i + 1) % ACTIONS.length);
    else if (key.return) onChoose(ACTIONS[selected]!.action);
    else if (key.escape || input === 'q') onChoose('back');
  });
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { bold: true }, `Session ${sessionId}`),
    ...ACTIONS.map((a, i) => h(Text, { key: a.action, inverse: i === selected }, `${i === selected ? '>' : ' '} ${a.label}`)),
  );
}
