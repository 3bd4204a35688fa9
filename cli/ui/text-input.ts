import { Text, useInput } from 'ink';
import { h } from './h.ts';

export interface TextInputProps {
  value: string;
  onChange: (value: string) => void;
  onSubmit: (value: string) => void;
  active: boolean;
  placeholder?: string;
}

/** A one-line text field: typing, backspace, enter to submit. */
export function TextInput({ value, onChange, onSubmit, active, placeholder }: TextInputProps) {
  useInput(
    (input, key) => {
      if (key.return) onSubmit(value);
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
