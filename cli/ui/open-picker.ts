import { render } from 'ink';
import { apiClient } from '../services/client.ts';
import { h } from './h.ts';
import { Picker } from './picker.ts';

/** Opens the picker on the configured account; answers the exit code once it is closed. */
export async function openPicker(): Promise<number> {
  const api = apiClient();
  // interactive: the caller checked for a terminal; Ink would otherwise draw nothing when CI is set.
  const app = render(h(Picker, { api }), { stdout: process.stdout, stdin: process.stdin, exitOnCtrlC: true, interactive: true });
  await app.waitUntilExit();
  return 0;
}
