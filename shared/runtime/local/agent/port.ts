import { connect, type Socket } from 'node:net';
import { constants } from 'node:os';
import { PortNotListeningError } from '../../types.ts';
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
 * `signal` rejects a pending open and destroys an open connection.
 *
 * Rejects with PortNotListeningError when nothing accepts on the port, AgentGoneError when the
 * agent's socket is gone or closes before it answers (the sandbox gone, or going).
 */
export function openThroughAgent(socketPath: string, port: number, signal?: AbortSignal): Promise<Socket> {
  const request = portFrame(port);
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const socket = connect({ path: socketPath, allowHalfOpen: true });
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
      const type = String.fromCharCode(header[0]!);
      const length = header.readUInt32LE(1);
      if (type === 'K' && length === 0) return settle();
      if (type !== 'F' || length < 4 || length > ANSWER_MAX_BYTES) {
        return settle(new Error(`the sandbox agent sent an unexpected answer (${JSON.stringify(type)}) for port ${port}`));
      }
      const payload = socket.read(length) as Buffer | null;
      if (!payload) return;
      if (payload.byteLength < length) return settle(gone());
      const errno = payload.readUInt32LE(0);
      const reason = payload.subarray(4).toString('utf8');
      if (errno === constants.errno.ECONNREFUSED) settle(new PortNotListeningError(`nothing accepts connections on port ${port} in the sandbox`));
      else settle(new Error(`could not connect to port ${port} in the sandbox: ${reason}`));
    }

    const gone = (): Error => new AgentGoneError(`the sandbox agent closed the connection before it answered for port ${port}`);
    const closed = (): void => settle(gone());

    socket.on('readable', take);
    socket.on('close', closed);
    // A connection that fails (no socket: the sandbox gone) is told by its close.
    socket.on('error', () => undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.write(request);
  });
}
