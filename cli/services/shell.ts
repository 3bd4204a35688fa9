import { constants } from 'node:os';
import WebSocket from 'ws';
import type { PaddockClient, TerminalEnd, WebSocketClass } from '../api/index.ts';
import { CliError, EXIT_ERROR } from '../errors.ts';
import { enterRawMode } from '../terminal/raw-mode.ts';

// Keystrokes sent and not yet on the wire past which the local terminal is not read (a huge paste).
const INPUT_WINDOW_BYTES = 1024 * 1024;

export interface ShellIo {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

/**
 * A remote terminal on this one: raw mode, every key to the session, its output here, the size
 * followed. Answers the remote command's exit code (128 + the signal's number when a signal ended
 * it); a connection that ends without an exit is reported on stderr and answered as an error.
 * The local terminal is left as it was found however it ends.
 */
export async function runShell(client: PaddockClient, sessionId: string, command: string[] | undefined, io: ShellIo): Promise<number> {
  const { stdin, stdout, stderr } = io;
  const terminal = await client.openTerminal(sessionId, {
    cols: stdout.columns,
    rows: stdout.rows,
    command,
    // Node 20 has no global WebSocket; ws has the same interface.
    WebSocket: WebSocket as unknown as WebSocketClass,
    onOutput: (data) => stdout.write(data),
  });
  const restore = enterRawMode(stdin);
  // 'readable', not 'data': a stream paused after 'data' does not hand a later 'readable'
  // listener anything (the picker's Ink reads it that way once the shell is over).
  let waiting: NodeJS.Timeout | undefined;
  const onInput = (): void => {
    if (waiting) return;
    let chunk: Buffer | string | null;
    while (terminal.bufferedAmount < INPUT_WINDOW_BYTES && (chunk = stdin.read() as Buffer | string | null) !== null) terminal.write(chunk);
    // A huge paste: what is not read waits in the stream, and past its buffer, in the terminal.
    if (terminal.bufferedAmount >= INPUT_WINDOW_BYTES) waiting = setTimeout(() => ((waiting = undefined), onInput()), 10);
  };
  const onResize = () => terminal.resize(stdout.columns, stdout.rows);
  // Signals from outside (a closed window, kill): the remote side is ended, and the terminal restored.
  const onSignal = () => terminal.close();
  stdin.on('readable', onInput);
  stdout.on('resize', onResize);
  for (const signal of ['SIGTERM', 'SIGHUP', 'SIGINT'] as const) process.on(signal, onSignal);
  stdin.ref?.();
  let end: TerminalEnd;
  try {
    end = await terminal.ended;
  } finally {
    stdin.off('readable', onInput);
    clearTimeout(waiting);
    stdout.off('resize', onResize);
    for (const signal of ['SIGTERM', 'SIGHUP', 'SIGINT'] as const) process.off(signal, onSignal);
    // Nothing keeps the process for the terminal's sake once the shell is over.
    stdin.unref?.();
    restore();
  }
  if (end.kind === 'exit') {
    if (end.exitCode !== null) return end.exitCode;
    return 128 + (constants.signals[end.signal as keyof typeof constants.signals] ?? 9);
  }
  stderr.write(`\r\npaddock: ${closeMessage(end.code, end.reason)}\n`);
  return EXIT_ERROR;
}

function closeMessage(code: number, reason: string): string {
  if (code === 4001) return `the session is gone: ${reason || 'it was destroyed'}.`;
  if (code === 4002) return `the shell was closed after being idle (${reason}).`;
  if (code === 4003) return 'the API key was revoked, and its shell closed with it; `paddock login` saves a new one.';
  if (code === 1001) return 'the server is restarting; run `paddock shell` again.';
  if (code === 1000) return 'the shell was closed.';
  return `the connection to Paddock was lost${reason ? ` (${reason})` : ''} (WebSocket code ${code}).`;
}

/** Refuses a shell when this is not a terminal, naming what works there. */
export function requireTerminal(io: ShellIo): void {
  if (io.stdin.isTTY && io.stdout.isTTY) return;
  throw new CliError('`paddock shell` needs a terminal: standard input and output are not one here.', {
    hint: 'To run a command without a terminal, use `paddock exec -- <command>` (piped input is passed on to it).',
    code: 'not_a_terminal',
  });
}
