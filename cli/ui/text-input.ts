import { Text, useInput } from 'ink';
import { h } from './h.ts';

export interface TextInputProps {
  value: string;
  onChange: (value: string) => void;
  onSubmit: (value: string) => void;
  active: boolean;
  placeholder?: string;
}

/**
 * A one-line text field: typing, backspace, enter to submit. Text and its Enter can come in one
 * chunk (a paste, tmux, a slow ssh link), which Ink does not report as a return: a line break
 * inside the chunk submits what comes before it, and lines pasted together stay lines (a shell
 * reads them so).
 */
export function TextInput({ value, onChange, onSubmit, active, placeholder }: TextInputProps) {
  const submitFrom = (text: string) => {
    const end = text.lastIndexOf('\n');
    const whole = value + text.slice(0, end);
    const rest = text.slice(end + 1);
    if (rest === '') onSubmit(whole);
    else onChange(`${whole}\n${rest}`);
  };
  useInput(
    (input, key) => {
      const text = input.replace(/\r\n?/g, '\n');
      if (key.return) onSubmit(value);
      else if (!key.ctrl && !key.meta && text.includes('\n')) submitFrom(text);
      else if (key.backspace || key.delete) onChange(value.slice(0, -1));
      else if (!key.ctrl && !key.meta && !key.escape && !key.upArrow && !key.downArrow && !key.leftArrow && !key.rightArrow && !key.tab && input) {
        onChange(value + input);
      }
    },
    { isActive: active },
  );
  if (!value && placeholder) return h(Text, null, h(Text, { inverse: active }, ' '), h(Text, { dimColor: true }, placeholder));
  return h(Text, null, value, active ? h(Text, { inverse: true }, ' ') : null);
}
