import { connect, type Socket } from 'node:net';
import { constants } from 'node:os';
import { PortNotListeningError, type PortReads } from '../../types.ts';
import { AgentGoneError } from './client.ts';
import { HEADER_BYTES, portFrame } from './protocol.ts';

// A connection to a port inside a sandbox through its agent (paddock-agent.c, "Ports"): one
// connection to the agent's socket, the port asked for, one answer; then the same socket carries
// the TCP connection's bytes as they are. It is handed over as it is, so nothing of Paddock's sits
// between the caller and the agent's relay, and its backpressure is the socket's.

/**
 * How long the answer may take: the relay's connect gives up after 5 s (CONNECT_MS); past this the
 * agent is taken to be starved or stuck.
 */
const ANSWER_TIMEOUT_MS = 15_000;

/** The answer's payload is an errno and a line of text: anything longer is not the agent's. */
const ANSWER_MAX_BYTES = 4096;

/**
 * Connects to `port` on the sandbox's loopback through the agent listening at `socketPath`.
 * Resolves with the agent's socket, paused, its first byte the program's; it ends as the program
 * half-closes, and its end() is a half-close passed on. Errors on it after that are the caller's
 * to hear ('error' is never left unheard, so an unwatched one cannot crash the process). Aborting
 * `signal` rejects a pending open and destroys an open connection. With `reads`, the socket
 * reads into their buffers (Node's `onread`) and hands the program's bytes to them alone.
 *
 * Rejects with PortNotListeningError when nothing accepts on the port, AgentGoneError when the
 * agent's socket is gone or closes before it answers (the sandbox gone, or going).
 */
export function openThroughAgent(socketPath: string, port: number, signal?: AbortSignal, reads?: PortReads): Promise<Socket> {
  const request = portFrame(port);
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    /** The answer's bytes so far, read into the caller's buffers (copied: they are the caller's again after each read). */
    let said = Buffer.alloc(0);
    const onread = reads && {
      buffer: () => reads.buffer(),
      callback: (bytes: number, into: Uint8Array): boolean => {
        const chunk = (into as Buffer).subarray(0, bytes);
        if (answered) return reads.take(chunk);
        said = Buffer.concat([said, chunk]);
        const heard = heardAnswer(said, port);
        if (heard === undefined) return true;
        if (heard.failure) {
          settle(heard.failure);
          return false;
        }
        settle();
        // The program spoke first: its first bytes came with the answer.
        return heard.rest.byteLength === 0 || reads.take(heard.rest);
      },
    };
    const socket = connect({ path: socketPath, allowHalfOpen: true, ...(onread ? { onread } : {}) });
    let answered = false;
    let header: Buffer | undefined;

    const onAbort = (): void => {
      if (!answered) settle(signal?.reason instanceof Error ? signal.reason : new DOMException('the open was aborted', 'AbortError'));
      else socket.destroy();
    };
    const timer = setTimeout(() => settle(new Error(`the sandbox agent did not answer for port ${port} in time`)), ANSWER_TIMEOUT_MS);
    timer.unref();

    function settle(failure?: Error): void {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      socket.off('readable', take);
      socket.off('close', closed);
      if (failure) {
        signal?.removeEventListener('abort', onAbort);
        socket.destroy();
        reject(failure);
        return;
      }
      // The abort still ends the connection, until the connection ends by itself.
      socket.once('close', () => signal?.removeEventListener('abort', onAbort));
      resolve(socket);
    }

    /** Reads the answer and not a byte more: what follows 'K' is the program's. */
    function take(): void {
      header ??= (socket.read(HEADER_BYTES) as Buffer | null) ?? undefined;
      if (!header) return;
      if (header.byteLength < HEADER_BYTES) return settle(gone());
      let payload: Buffer | undefined;
      if (carriesReason(header)) {
        const length = header.readUInt32LE(1);
        payload = (socket.read(length) as Buffer | null) ?? undefined;
        if (!payload) return;
        if (payload.byteLength < length) return settle(gone());
      }
      settle(answerFailure(header, payload, port));
    }

    const gone = (): Error => new AgentGoneError(`the sandbox agent closed the connection before it answered for port ${port}`);
    const closed = (): void => settle(gone());

    if (!onread) socket.on('readable', take);
    socket.on('close', closed);
    // A connection that fails (no socket: the sandbox gone) is told by its close.
    socket.on('error', () => undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.write(request);
  });
}

/**
 * The agent's answer, once `said` holds it whole: its failure, or none and the bytes after it
 * (the program's); undefined while it is not whole.
 */
function heardAnswer(said: Buffer, port: number): { failure?: Error; rest: Buffer } | undefined {
  if (said.byteLength < HEADER_BYTES) return undefined;
  const length = said.readUInt32LE(1);
  const failing = carriesReason(said);
  if (failing && said.byteLength < HEADER_BYTES + length) return undefined;
  const payload = failing ? said.subarray(HEADER_BYTES, HEADER_BYTES + length) : undefined;
  return { failure: answerFailure(said.subarray(0, HEADER_BYTES), payload, port), rest: said.subarray(HEADER_BYTES) };
}

/** An 'F' answer, whose payload (an errno and a line of text) follows its header. */
function carriesReason(header: Buffer): boolean {
  const length = header.readUInt32LE(1);
  return header[0] === 0x46 && length >= 4 && length <= ANSWER_MAX_BYTES;
}

/** What the agent's answer (its header, and a failure's payload) says: nothing for 'K', else why the port cannot be reached. */
function answerFailure(header: Buffer, payload: Buffer | undefined, port: number): Error | undefined {
  const type = String.fromCharCode(header[0]!);
  const length = header.readUInt32LE(1);
  if (type === 'K' && length === 0) return undefined;
  if (type !== 'F' || !payload) return new Error(`the sandbox agent sent an unexpected answer (${JSON.stringify(type)}) for port ${port}`);
  const errno = payload.readUInt32LE(0);
  const reason = payload.subarray(4).toString('utf8');
  if (errno === constants.errno.ECONNREFUSED) return new PortNotListeningError(`nothing accepts connections on port ${port} in the sandbox`);
  return new Error(`could not connect to port ${port} in the sandbox: ${reason}`);
}

