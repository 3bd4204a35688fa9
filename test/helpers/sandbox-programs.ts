import type { Duplex } from 'node:stream';
import type { SandboxRuntime } from '../../shared/runtime/types.ts';

// Programs the runtime suites run in a sandbox's background: each listens on port 0 and prints
// the port it got, then whatever else it has to say, a line each.

/** A program of the sandbox's, running in the background: the port it listens on, and what it printed after. */
export interface Served {
  port: number;
  /** Lines it printed after the port. */
  lines: string[];
  /** Settles when the program exits. */
  exit: Promise<number | null>;
  stop(): void;
}

/** Runs `script` (Python) in the sandbox through `runtime` and waits for the port it prints first. */
export async function serveInSandbox(runtime: Pick<SandboxRuntime, 'exec'>, id: string, script: string, timeoutMs = 300_000): Promise<Served> {
  const abort = new AbortController();
  let text = '';
  let stderr = '';
  const lines: string[] = [];
  let port: ((port: number) => void) | undefined;
  const listening = new Promise<number>((resolve) => (port = resolve));
  const exit = runtime
    .exec(id, {
      argv: ['python3', '-u', '-c', script],
      timeoutMs,
      signal: abort.signal,
      onStdout: (chunk) => {
        text += Buffer.from(chunk).toString();
        const complete = text.split('\n');
        text = complete.pop()!;
        for (const line of complete) {
          if (port) {
            port(Number(line));
            port = undefined;
          } else lines.push(line);
        }
      },
      onStderr: (chunk) => void (stderr += Buffer.from(chunk).toString()),
    })
    .then((result) => result.exitCode);
  exit.catch(() => undefined);
  const got = await Promise.race([listening, exit.then((code) => Promise.reject(new Error(`the server exited (${code}) before it listened: ${stderr}`)))]);
  return { port: got, lines, exit, stop: () => abort.abort() };
}

/**
 * A Python program that binds a TCP socket `s` to port 0 of `address` (127.0.0.1 unless told),
 * listens with `backlog`, prints the port, then runs `body` (Python, at column 0) with `s`.
 */
export function listening(body: string, options: { address?: string; family?: 'AF_INET' | 'AF_INET6'; backlog?: number; imports?: string[] } = {}): string {
  return `
import ${['socket', ...(options.imports ?? [])].join(', ')}
s = socket.socket(socket.${options.family ?? 'AF_INET'}, socket.SOCK_STREAM)
s.bind((${JSON.stringify(options.address ?? '127.0.0.1')}, 0))
s.listen(${options.backlog ?? 1})
print(s.getsockname()[1])
${body.replace(/^\n/, '')}`;
}

/** Python's http.server over /workspace on 127.0.0.1 only, hello.txt in it holding `text`. */
export function helloServer(text: string): string {
  return `
import http.server
open('/workspace/hello.txt', 'w').write(${JSON.stringify(text)})
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), lambda *a: Quiet(*a, directory='/workspace'))
print(s.server_address[1])
s.serve_forever()
`;
}

/** Everything the stream gives until its end. */
export async function readAll(stream: Duplex): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
