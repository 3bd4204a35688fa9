import { Box, Text, useInput } from 'ink';
import { h } from './h.ts';
import { colour } from './colour.ts';

export interface ConfirmDestroyProps {
  sessionId: string;
  onAnswer: (yes: boolean) => void;
}

/** Destroying cannot be undone: y confirms, anything else cancels. */
export function ConfirmDestroy({ sessionId, onAnswer }: ConfirmDestroyProps) {
  useInput((input) => onAnswer(input === 'y' || input === 'Y'));
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { color: colour('red'), bold: true }, `Destroy session ${sessionId}?`),
    h(Text, null, 'Its files and processes are gone for good. Press y to destroy, any other key to cancel.'),
  );
}
