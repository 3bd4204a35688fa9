import { Text } from 'ink';
import { h } from './h.ts';
import { colour } from './colour.ts';

export interface Message {
  kind: 'error' | 'info';
  text: string;
}

/** One line of news: an error in red (the picker keeps running), or information. */
export function MessageLine({ message }: { message: Message | undefined }) {
  if (!message) return null;
  return h(Text, { color: colour(message.kind === 'error' ? 'red' : 'green'), wrap: 'wrap' }, message.text);
}
