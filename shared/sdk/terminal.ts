// The terminal's WebSocket (GET /v1/sandboxes/{id}/terminal, subprotocol paddock.terminal.v1)
// as a small object: keystrokes in, output out, resize, and how it ended. No dependency: the
// WebSocket is the platform's (browsers, Node 22+), or one passed in with the same interface
// (the `ws` package's, on Node 20).

export const TERMINAL_SUBPROTOCOL = 'paddock.terminal.v1';
const STDIN = 0;
const OUTPUT = 1;
const CONTROL = 3;

/** What a WebSocket class must offer: the WHATWG interface's part this uses. */
export interface WebSocketLike {
  readonly readyState: number;
  readonly bufferedAmount: number;
  binaryType: string;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (event: any) => void): void;
}
export type WebSocketClass = new (url: string, protocols?: string | string[]) => WebSocketLike;

export interface TerminalOptions {
  cols?: number;
  rows?: number;
  /** The program and its arguments; default the sandbox's login shell. */
  command?: string[];
  /** The terminal's output (secrets masked), as it comes. */
  onOutput: (data: Uint8Array) => void;
  /** A WebSocket class; default the global one. */
  WebSocket?: WebSocketClass;
}

/** How a terminal ended: its command's exit, or a close without one (the reason says why). */
export type TerminalEnd =
  | { kind: 'exit'; exitCode: number | null; signal: string | null }
  | { kind: 'closed'; code: number; reason: string };

export interface Terminal {
  /** Keystrokes (UTF-8 text or bytes). */
  write(data: string | Uint8Array): void;
  resize(cols: number, rows: number): void;
  /** Bytes written and not yet sent: a client pasting a lot waits while it is high. */
  readonly bufferedAmount: number;
  /** Settles once the connection is closed. */
  readonly ended: Promise<TerminalEnd>;
  close(): void;
}

const encoder = new TextEncoder();

function frame(channel: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 1);
  out[0] = channel;
  out.set(payload, 1);
  return out;
}

/**
 * Opens the socket at `url` (ws: or wss:, the ticket in its query) and resolves once it is open.
 * A refused upgrade rejects with what `refusal` makes of the answer, when the WebSocket class
 * lets it be read (the `ws` package's does; a browser's only says that it failed).
 */
export function connectTerminal(url: string, options: TerminalOptions, refusal: (status: number, headers: Record<string, string>, body: string) => Error | Promise<Error>, failure: (message: string) => Error): Promise<Terminal> {
  const Socket = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketClass }).WebSocket;
  if (!Socket) return Promise.reject(failure('This platform has no WebSocket: pass one (e.g. the ws package\'s) as the WebSocket option.'));
  const socket = new Socket(url, TERMINAL_SUBPROTOCOL);
  socket.binaryType = 'arraybuffer';
  let exit: TerminalEnd | undefined;
  const ended = new Promise<TerminalEnd>((resolve) => {
    socket.addEventListener('close', (event: { code: number; reason: string }) => resolve(exit ?? { kind: 'closed', code: event.code, reason: event.reason }));
  });
  socket.addEventListener('message', (event: { data: ArrayBuffer | string }) => {
    if (typeof event.data === 'string') return;
    const bytes = new Uint8Array(event.data);
    if (bytes[0] === OUTPUT) options.onOutput(bytes.subarray(1));
    else if (bytes[0] === CONTROL) {
      try {
        const control = JSON.parse(new TextDecoder().decode(bytes.subarray(1))) as { type?: string; exitCode?: number | null; signal?: string | null };
        if (control.type === 'exit') exit = { kind: 'exit', exitCode: control.exitCode ?? null, signal: control.signal ?? null };
      } catch {
        // A control frame this client does not understand is not its business.
      }
    }
  });
  const terminal: Terminal = {
    write: (data) => socket.readyState === 1 && socket.send(frame(STDIN, typeof data === 'string' ? encoder.encode(data) : data)),
    resize: (cols, rows) => socket.readyState === 1 && socket.send(frame(CONTROL, encoder.encode(JSON.stringify({ type: 'resize', cols, rows })))),
    get bufferedAmount() {
      return socket.bufferedAmount;
    },
    ended,
    close: () => socket.close(1000, 'closed by the client'),
  };
  return new Promise<Terminal>((resolve, reject) => {
    let refused: Promise<Error> | undefined;
    const on = (socket as unknown as { on?: (event: string, listener: (...args: any[]) => void) => void }).on;
    on?.call(socket, 'unexpected-response', (req: { destroy(): void }, res: AsyncIterable<Uint8Array> & { statusCode?: number; headers: Record<string, string> }) => {
      refused = (async () => {
        let body = '';
        for await (const chunk of res) body += new TextDecoder().decode(chunk);
        req.destroy();
        return refusal(res.statusCode ?? 0, res.headers, body);
      })();
      void refused.then(reject);
    });
    socket.addEventListener('open', () => resolve(terminal));
    socket.addEventListener('error', () => {
      if (!refused) reject(failure('The terminal connection failed.'));
    });
  });
}
