// Text from a sandbox (a command's output, a file's lines, the names in a folder) is shown, never
// obeyed: its control characters would otherwise reach the terminal as it stands (colours, a new
// title, cursor moves that tear the frame, a clipboard write by OSC 52). Each C0 control becomes
// its caret form (ESC is ^[), a C1 control (which some terminals obey as well) the replacement
// character, and a tab a few spaces.

const TAB = '    ';

export function visible(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    if (c === '\t') return TAB;
    const code = c.charCodeAt(0);
    return code >= 0x80 ? '\uFFFD' : `^${String.fromCharCode(code ^ 0x40)}`;
  });
}
