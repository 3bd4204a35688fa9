import { render } from 'ink';
import { apiClient } from '../services/client.ts';
import { runShell } from '../services/shell.ts';
import { h } from './h.ts';
import { Picker } from './picker.ts';

/** Opens the picker on the configured account; answers the exit code once it is closed. */
export async function openPicker(): Promise<number> {
  const api = apiClient();
  // interactive: the caller checked for a terminal; Ink would otherwise draw nothing when CI is set.
  const openShell = async (sessionId: string): Promise<string> => {
    // The shell starts on a clear screen, as after `clear`.
    process.stdout.write('\u001B[H\u001B[2J');
    try {
      const code = await runShell(api, sessionId, undefined, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
      return `The shell in ${sessionId} ended (exit code ${code}).`;
    } catch (err) {
      return `The shell could not be opened: ${err instanceof Error ? err.message : String(err)}`;
    }
  };
  const app = render(h(Picker, { api, openShell }), { stdout: process.stdout, stdin: process.stdin, exitOnCtrlC: true, interactive: true });
  await app.waitUntilExit();
  return 0;
}
