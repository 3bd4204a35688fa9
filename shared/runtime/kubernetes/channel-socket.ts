import type { KubeConfig } from '@kubernetes/client-node';
import WebSocket from 'ws';

export interface ChannelSocketOptions {
  /** The subresource's subprotocols, preferred first. */
  protocols: string[];
  /** What the socket is for, as the error of a refused upgrade names it. */
  purpose: string;
  /** The largest frame taken; a bigger one fails the connection rather than being buffered. */
  maxPayload?: number;
  signal?: AbortSignal;
}

/**
 * A pod subresource's WebSocket (exec, portforward), authenticated as the client library's own
 * calls are, paused: the server may speak first, so the caller resumes it once it listens. Rejects when the upgrade is refused (the pod gone, say), or with an AbortError when
 * `signal` aborts before it is open.
 */
export async function openChannelSocket(kubeConfig: KubeConfig, path: string, options: ChannelSocketOptions): Promise<WebSocket> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error('no Kubernetes cluster is configured');
  options.signal?.throwIfAborted();
  const wsOptions: WebSocket.ClientOptions = { perMessageDeflate: false, ...(options.maxPayload ? { maxPayload: options.maxPayload } : {}) };
  await kubeConfig.applyToHTTPSOptions(wsOptions as Parameters<KubeConfig['applyToHTTPSOptions']>[0]);
  options.signal?.throwIfAborted();
  const socket = new WebSocket(`${server.replace(/^http/, 'ws')}${path}`, options.protocols, wsOptions);
  const onAbort = () => socket.terminate();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => {
        socket.pause();
        resolve();
      });
      socket.once('error', (err) => reject(options.signal?.aborted ? abortError(options.signal) : err));
      socket.once('unexpected-response', (req, res) => {
        req.destroy();
        reject(new Error(`the ${options.purpose} was refused (HTTP ${res.statusCode})`));
      });
    });
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
  socket.on('error', () => undefined);
  return socket;
}

function abortError(signal: AbortSignal): Error {
  return new DOMException('The operation was aborted', { name: 'AbortError', cause: signal.reason });
}
