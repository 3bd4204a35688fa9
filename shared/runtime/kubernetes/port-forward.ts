import { addAbortSignal, Duplex } from 'node:stream';
import type WebSocket from 'ws';
import { PortNotListeningError } from '../types.ts';
import { openChannelSocket } from './channel-socket.ts';
import { classifyFailure, type ExecDeps } from './exec.ts';
import { bytesMoved } from '../../reclaim.ts';

// The portforward subresource over WebSocket: per port asked for, a data channel (2i) and an
// error channel (2i+1), and every frame starts with its channel. One port per connection here.
const DATA = 0;
const ERROR = 1;
// The kubelet opens each channel with the port, two bytes little-endian, before anything else.
const PORT_PREFIX_BYTES = 2;
// The one WebSocket protocol the kubelet's port-forward speaks in binary (v5 is exec's alone).
const PROTOCOL = 'v4.channel.k8s.io';
// Bytes read off the connection and not yet taken by the consumer, past which it is not read:
// TCP's window, up to the program in the pod, holds the rest.
const READ_WINDOW_BYTES = 64 * 1024;
// Bytes handed to the WebSocket and not yet on the wire, past which a write waits.
const WRITE_WINDOW_BYTES = 64 * 1024;
// The size of the frames a write is cut into, as the kubelet's own copy reads 32 KiB at a time;
// a frame is read whole by the kubelet, so a large write must not become one large frame.
const FRAME_BYTES = 32 * 1024;
// The kubelet's frames are at most its 32 KiB reads; anything much larger is refused.
const MAX_FRAME_BYTES = 1024 * 1024;
// The error channel carries one message; more than this of it is not kept.
const ERROR_TEXT_MAX_BYTES = 8 * 1024;

// How a kubelet tells that nothing accepts on the port: containerd and CRI-O dial the pod's
// loopback from Go ("dial tcp4 127.0.0.1:P: connect: connection refused"), older runtimes ran
// socat ("Connection refused"), Windows nodes say the machine "actively refused it".
const REFUSED = /connection refused|actively refused/i;

/**
 * A connection to `port` on the pod's loopback address, through the pod's portforward
 * subresource. Its bytes are the connection's both ways, with backpressure both ways. What the
 * protocol allows, and what a caller sees:
 *
 * - The kubelet dials the port as the WebSocket opens, and reports a refusal on the error channel
 *   only then: so this resolves once the WebSocket is open, and the stream is then destroyed with
 *   PortNotListeningError before it yields a byte when nothing accepts on the port (what was
 *   written meanwhile is dropped). SandboxGoneError, at once when the upgrade is refused for a pod
 *   gone or not running, or later for a connection that fails as its pod goes.
 * - No half-close toward the program: v4 has no frame that ends one channel, so ending the
 *   writable side sends nothing, and the program sees its input end only when the connection
 *   does (the stream destroyed, or the program's own close).
 * - The program's end of its output reaches the stream as the end of the WebSocket, which the
 *   kubelet closes once both directions are done, or a second after the program's (containerd).
 * - Destroying the stream closes the WebSocket, and the kubelet closes the connection in the pod.
 */
export async function openPortInPod(deps: ExecDeps, podName: string, port: number, signal?: AbortSignal): Promise<Duplex> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`port must be an integer from 1 to 65535, not ${port}`);
  const path = `/api/v1/namespaces/${deps.pods.namespace}/pods/${podName}/portforward?ports=${port}`;
  let ws: WebSocket;
  try {
    ws = await openChannelSocket(deps.kubeConfig, path, { protocols: [PROTOCOL], purpose: 'port-forward', maxPayload: MAX_FRAME_BYTES, signal });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw await classifyFailure(deps.pods, podName, (err as Error)?.message ?? String(err));
  }
  const stream = portStream(ws, (why) => classifyFailure(deps.pods, podName, why));
  if (signal) addAbortSignal(signal, stream);
  return stream;
}

function portStream(ws: WebSocket, classify: (why: string) => Promise<Error>): Duplex {
  let dataPrefix = PORT_PREFIX_BYTES;
  let errorPrefix = PORT_PREFIX_BYTES;
  let errorText = Buffer.alloc(0);

  const stream = new Duplex({
    // Once the program's side is over nothing more can reach it: the writable side ends too.
    allowHalfOpen: false,
    readableHighWaterMark: READ_WINDOW_BYTES,
    writableHighWaterMark: WRITE_WINDOW_BYTES,
    read() {
      ws.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      // The connection is over: its outcome is the readable side's, and the bytes go where a
      // closed socket's would.
      if (ws.readyState !== ws.OPEN) return callback();
      let last!: Buffer;
      const frames: Buffer[] = [];
      for (let at = 0; at < chunk.length; at += FRAME_BYTES) {
        const piece = chunk.subarray(at, at + FRAME_BYTES);
        last = Buffer.allocUnsafe(piece.length + 1);
        last[0] = DATA;
        piece.copy(last, 1);
        frames.push(last);
      }
      if (frames.length === 0) return callback();
      let called = false;
      const done = () => {
        if (called) return;
        called = true;
        callback();
      };
      for (const frame of frames) {
        bytesMoved(frame.length);
        // A failed send is the connection's end, which the close that follows reports.
        ws.send(frame, frame === last ? () => done() : undefined);
      }
      if (ws.bufferedAmount < WRITE_WINDOW_BYTES) done();
    },
    final(callback) {
      // Nothing to send: see above (no half-close in v4).
      callback();
    },
    destroy(err, callback) {
      if (ws.readyState === ws.CONNECTING || ws.readyState === ws.OPEN) {
        // Read on, so the close handshake is not stuck behind a window nobody will take.
        ws.resume();
        ws.close(1000);
      }
      callback(err);
    },
  });

  ws.on('message', (raw: WebSocket.RawData, isBinary: boolean) => {
    const frame = Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw as Buffer);
    bytesMoved(frame.length);
    if (stream.destroyed || !isBinary || frame.length === 0) return;
    let payload = frame.subarray(1);
    if (frame[0] === DATA) {
      const skip = Math.min(dataPrefix, payload.length);
      dataPrefix -= skip;
      payload = payload.subarray(skip);
      if (payload.length === 0 || stream.readableEnded) return;
      if (!stream.push(payload)) ws.pause();
    } else if (frame[0] === ERROR) {
      const skip = Math.min(errorPrefix, payload.length);
      errorPrefix -= skip;
      payload = payload.subarray(skip);
      const room = ERROR_TEXT_MAX_BYTES - errorText.length;
      if (payload.length > 0 && room > 0) errorText = Buffer.concat([errorText, payload.subarray(0, room)]);
    }
  });
  ws.on('close', (code: number) => {
    if (stream.destroyed) return;
    const text = errorText.toString('utf8').trim();
    if (text !== '' && REFUSED.test(text)) return void stream.destroy(new PortNotListeningError(`nothing accepts connections on the port (${text})`));
    // The kubelet closes with a close frame however the connection ended; an error told on the
    // error channel, or a connection cut short, is the pod's going or a failure of its own.
    if (text === '' && (code === 1000 || code === 1005)) return void stream.push(null);
    const why = text !== '' ? `the port-forward failed: ${text}` : `the port-forward connection broke (WebSocket close ${code})`;
    void classify(why).then((err) => stream.destroy(err));
  });
  ws.resume();
  return stream;
}
