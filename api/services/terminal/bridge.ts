import type { WebSocket, RawData } from 'ws';
import { SecretMasker, type MaskSet } from '../../../shared/exec/masker.ts';
import { SandboxGoneError, type TerminalSession } from '../../../shared/runtime/types.ts';
import { STREAM_IDLE_RELEASE_MS } from '../exec/run.ts';
import { whenConfirmed } from '../streaming.ts';
import type { KeySession } from '../../auth/key-sessions.ts';

// The terminal's WebSocket protocol (paddock.terminal.v1): binary frames whose first byte is the
// channel.
export const STDIN = 0;
export const OUTPUT = 1;
export const CONTROL = 3;

/** Close codes: 1000 after the exit frame; 4000-4999 are Paddock's own. */
export const CLOSE = {
  exited: 1000,
  shutdown: 1001,
  protocol: 1008,
  internal: 1011,
  sandboxGone: 4001,
  idle: 4002,
  revoked: 4003,
} as const;

// Output sent and not yet on the client's wire: past it the runtime stops reading the terminal,
// so a client that does not read holds this much, not more.
const OUTPUT_WINDOW_BYTES = 256 * 1024;
const CONTROL_MAX_BYTES = 1024;
export const MAX_SIZE = 1000;

export interface BridgeOptions {
  idleMs: number;
  /** The request's key: nothing goes either way unless it is confirmed (auth/key-sessions.ts). */
  session?: KeySession;
  /** The secrets to mask in the output, built; undefined for none. */
  masks: MaskSet | undefined;
  /** Spends the output's bytes from its account's budget; a promise while that account is past it. */
  pace(bytes: number): void | Promise<void>;
  /** Why the sandbox went (its destroyReason), for the close reason. */
  goneReason(): Promise<string>;
  onError(err: unknown): void;
}

/**
 * Joins a client's WebSocket to a runtime terminal: stdin to the terminal as fast as the terminal
 * takes it (the socket is not read meanwhile), output masked as exec's is and as fast as the
 * client takes it, resize, the exit frame, and a close with a reason for every other end. No
 * frame's content is looked at beyond its first byte, except control frames (small, bounded).
 */
export class TerminalBridge {
  private readonly masker: SecretMasker;
  private readonly abort = new AbortController();
  private idleTimer: NodeJS.Timeout | undefined;
  private releaseTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** How a close before the socket was attached is told to it. */
  private closing: { code: number; reason: string } = { code: CLOSE.shutdown, reason: 'closed' };
  private readonly gate: { open: Promise<void>; resolve(): void };
  private ws: WebSocket | undefined;
  private readonly options: BridgeOptions;

  constructor(options: BridgeOptions) {
    this.options = options;
    this.masker = new SecretMasker(options.masks);
    let resolve!: () => void;
    this.gate = { open: new Promise<void>((r) => (resolve = r)), resolve };
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** The runtime's output callback: masked, framed, and paced by the client. */
  readonly output = (chunk: Uint8Array): void | Promise<void> => {
    if (this.closed) return;
    this.touch();
    const masked = this.masker.push(chunk);
    clearTimeout(this.releaseTimer);
    // Bytes held back because they could begin a secret go out once the output pauses.
    if (this.masker.held > 0) this.releaseTimer = setTimeout(() => void this.send(OUTPUT, this.masker.release()), STREAM_IDLE_RELEASE_MS);
    const sent = this.send(OUTPUT, masked);
    // Past the account's output budget, the terminal is not read again until this chunk is paid for.
    const paid = this.options.pace(chunk.length);
    return paid && sent ? Promise.all([paid, sent]).then(() => undefined) : (paid ?? sent);
  };

  /** Starts relaying once the upgrade is done and the terminal open. */
  attach(ws: WebSocket, session: TerminalSession): void {
    this.ws = ws;
    if (this.closed) return void ws.close(this.closing.code, this.closing.reason);
    const socket = (ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    let writing: Promise<void> = Promise.resolve();
    let pending = 0;
    // Keystrokes and resizes reach the terminal one at a time, in the order they came: a resize
    // is set before the keystrokes after it are written (xterm.js's fit addon sends one as the
    // socket opens, before the command has even started). Until the terminal has taken every
    // frame already read (at most one socket read's worth), the socket is not read, and a flood
    // waits in TCP.
    const inOrder = (step: () => Promise<void>) => {
      pending++;
      socket.pause();
      writing = writing.then(step).then(() => {
        if (--pending === 0 && !this.closed) socket.resume();
      });
    };
    ws.on('message', (data: RawData, isBinary: boolean) => {
      const frame = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
      if (!isBinary || frame.length === 0) return this.close(CLOSE.protocol, 'frames must be binary, the first byte the channel');
      this.touch();
      if (frame[0] === STDIN) return inOrder(() => this.confirmed(() => session.write(frame.subarray(1))));
      if (frame[0] === CONTROL) {
        const size = this.control(frame.subarray(1));
        if (size) inOrder(() => this.confirmed(() => session.resize(size.cols, size.rows)));
        return;
      }
      this.close(CLOSE.protocol, `unknown channel ${frame[0]}`);
    });
    ws.on('close', () => this.end());
    ws.on('error', () => this.end());
    this.gate.resolve();
    this.touch();
    session.exit.then(
      (result) => this.exited(result.exitCode, result.signal),
      (err: unknown) => void this.failed(err),
    );
  }

  /** Ends the terminal with a reason: server shutdown, say. */
  close(code: number, reason: string): void {
    if (!this.closed) this.closing = { code, reason: reason.slice(0, 120) };
    const ws = this.ws;
    if (ws && (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING)) ws.close(code, reason.slice(0, 120));
    this.end();
  }

  /** A control frame's resize; anything else closes the connection. */
  private control(payload: Buffer): { cols: number; rows: number } | undefined {
    let message: { type?: unknown; cols?: unknown; rows?: unknown };
    try {
      if (payload.length > CONTROL_MAX_BYTES) throw new Error('too large');
      message = JSON.parse(payload.toString('utf8')) as typeof message;
    } catch {
      this.close(CLOSE.protocol, 'a control frame must be a JSON object of at most 1 KiB');
      return undefined;
    }
    const { cols, rows } = message;
    if (message.type !== 'resize' || !validSize(cols) || !validSize(rows)) {
      this.close(CLOSE.protocol, `control: only {"type":"resize","cols":1-${MAX_SIZE},"rows":1-${MAX_SIZE}}`);
      return undefined;
    }
    return { cols, rows };
  }

  private async exited(exitCode: number | null, signal: string | null): Promise<void> {
    clearTimeout(this.releaseTimer);
    await this.send(OUTPUT, this.masker.flush());
    await this.send(CONTROL, Buffer.from(JSON.stringify({ type: 'exit', exitCode, signal })));
    this.close(CLOSE.exited, signal ? `exited by ${signal}` : `exited ${exitCode}`);
  }

  private async failed(err: unknown): Promise<void> {
    if (this.closed) return;
    if (err instanceof SandboxGoneError) return this.close(CLOSE.sandboxGone, await this.options.goneReason());
    this.options.onError(err);
    this.close(CLOSE.internal, 'the terminal failed');
  }

  private send(channel: number, data: Uint8Array): void | Promise<void> {
    if (data.length === 0 && channel === OUTPUT) return;
    const frame = Buffer.concat([Buffer.of(channel), data]);
    return this.gate.open.then(() =>
      this.confirmed(() => {
        const ws = this.ws;
        if (this.closed || !ws || ws.readyState !== ws.OPEN) return;
        if (ws.bufferedAmount < OUTPUT_WINDOW_BYTES) return void ws.send(frame);
        return new Promise<void>((resolve) => ws.send(frame, () => resolve()));
      }),
    );
  }

  /** Runs `step` once the key allows it; never once it is revoked (the terminal is closing then). */
  private async confirmed(step: () => void | Promise<void>): Promise<void> {
    await whenConfirmed(this.options.session, step);
  }

  private touch(): void {
    clearTimeout(this.idleTimer);
    if (this.closed) return;
    this.idleTimer = setTimeout(() => this.close(CLOSE.idle, `idle for ${Math.round(this.options.idleMs / 1000)} s`), this.options.idleMs);
    this.idleTimer.unref();
  }

  /** The client went, or the terminal is over: the terminal's processes are killed whole. */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idleTimer);
    clearTimeout(this.releaseTimer);
    this.abort.abort();
    this.gate.resolve();
    // A client that stops reading must not hold its socket past the close handshake.
    const ws = this.ws;
    if (ws) setTimeout(() => ws.terminate(), 5000).unref();
  }
}

function validSize(n: unknown): n is number {
  return Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_SIZE;
}
