import { Text } from 'ink';
import { h } from './h.ts';

export interface Message {
  kind: 'error' | 'info';
  text: string;
}

/** One line of news: an error in red (the picker keeps running), or information. */
export function MessageLine({ message }: { message: Message | undefined }) {
  if (!message) return null;
  return h(Text, { color: message.kind === 'error' ? 'red' : 'green', wrap: 'wrap' }, message.text);
}
