import { spawn, type ChildProcess } from 'node:child_process';
import { request, type RequestOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { callOk, createRunningSandbox, localRuntimeOn, percentile, round, startStack, unroundedPercentile } from './stack.ts';
import type { SandboxRuntime } from '../shared/runtime/types.ts';

// Preview URLs (docs/api.md, "Preview URLs") against their floor: the same program in the same
// sandbox reached through runtime.openPort from this process, the very path the proxy takes into
// the sandbox (the agent's relay in its network namespace), less the API, with the same HTTP client
// on both: the proxy's own cost is what is left. Then the API's own p99 while previews are flooded with downloads.

const PORT = 8000;
const COUNT = Number(process.env.BENCH_PREVIEWS_COUNT ?? 200);
/**
 * Rounds before the timed ones: a fresh web runs the proxy's code unoptimised for its first
 * hundreds of requests, a process's first seconds, not what a deployment serves (docs/benchmarks.md).
 */
const WARMUP = Number(process.env.BENCH_PREVIEWS_WARMUP ?? 1000);
const BULK_MIB = Number(process.env.BENCH_PREVIEWS_BULK_MIB ?? 256);
const BULK_ROUNDS = 3;
const FLOOD = 16;
const FLOOD_MIB = 64;
const API_CALLS = Number(process.env.BENCH_PREVIEWS_API_CALLS ?? 1000);
const LATENCY_GOAL = 1.5;
const THROUGHPUT_GOAL = 0.7;
const API_P99_GOAL = 2;

// The sandbox's program: a small answer, and N MiB written as fast as the connection takes them.
const PROGRAM = `
import sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
CHUNK = b'x' * (1024 * 1024)
class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *args):
        pass
    def do_GET(self):
        if self.path.startswith('/big'):
            mib = int(self.path.split('mib=')[1])
            self.send_response(200)
            self.send_header('content-length', str(mib * 1024 * 1024))
            self.end_headers()
            for _ in range(mib):
                self.wfile.write(CHUNK)
        else:
            body = b'{"ok":true}'
            self.send_response(200)
            self.send_header('content-type', 'application/json')
            self.send_header('content-length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
`;

/** A GET by node:http with `options`, its body read and counted; resolves with ms from `started` and the bytes of the body. */
function timedGet(what: string, started: number, options: RequestOptions): Promise<{ ms: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ ...options, setHost: false });
    req.on('response', (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => (res.statusCode === 200 ? resolve({ ms: performance.now() - started, bytes }) : reject(new Error(`${what} answered ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A GET through the preview: a connection of its own to the API with the preview's Host. */
function viaPreview(api: URL, host: string, path: string): Promise<{ ms: number; bytes: number }> {
  return timedGet('the preview', performance.now(), { host: api.hostname, port: api.port, path, headers: { host }, agent: false });
}

/**
 * The same GET straight to the program: runtime.openPort, then the same HTTP client as through the
 * preview on that connection, so that both sides parse the same answer and only the path differs.
 */
async function direct(runtime: SandboxRuntime, id: string, path: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const socket: Duplex = await runtime.openPort(id, PORT);
  return timedGet('the program, directly,', started, { createConnection: () => socket as Socket, path, headers: { host: 'sandbox', connection: 'close' } });
}

/** Sequential GETs of the API with the key, timed one by one. */
async function apiLatencies(url: string, key: string, path: string, count: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) ms.push((await callOk(url, key, 'GET', path)).ms);
  return ms;
}

export const previewsBenchmark: Benchmark = {
  name: 'previews',
  summary:
    `preview URLs against runtime.openPort to the same program in the same sandbox: p50 of a small GET, ${COUNT} interleaved (goal ≤ ${LATENCY_GOAL}×); ` +
    `a ${BULK_MIB} MiB download (goal ≥ ${THROUGHPUT_GOAL * 100}% of the direct throughput); the API's p99 while ${FLOOD} connections download through a preview, served by the API's web, then by a second web (goal ≤ ${API_P99_GOAL}× quiet)`,
  async run(ctx) {
    const stack = await startStack(ctx, 'previews', {}, { webs: 2 });
    const runtime = localRuntimeOn(stack.dataDir);
    const flood: ChildProcess[] = [];
    try {
      const key = await mintApiKey(stack.url);
      const sandbox = await createRunningSandbox(stack.url, key);
      await callOk(stack.url, key, 'PUT', `/v1/sandboxes/${sandbox.id}/files?path=bench-program.py`, { content: PROGRAM });
      await callOk(stack.url, key, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, { command: ['python3', 'bench-program.py', String(PORT)], background: true });
      for (let tries = 0; ; tries++) {
        const ok = await direct(runtime, sandbox.id, '/small').then(() => true, () => false);
        if (ok) break;
        if (tries > 100) throw new Error('the program never listened');
        await new Promise((r) => setTimeout(r, 100));
      }
      // Public: no token to send, nothing of the token's check in the comparison but its lookup.
      const preview = (await callOk(stack.url, key, 'POST', `/v1/sandboxes/${sandbox.id}/previews`, { port: PORT, public: true })).body as { url: string };
      const api = new URL(stack.url);
      const host = new URL(preview.url).host;

      const proxied: number[] = [];
      const floor: number[] = [];
      for (let i = 0; i < WARMUP + COUNT; i++) {
        const a = await viaPreview(api, host, '/small');
        const b = await direct(runtime, sandbox.id, '/small');
        if (i < WARMUP) continue;
        proxied.push(a.ms);
        floor.push(b.ms);
      }
      const [proxiedP50, floorP50] = [unroundedPercentile(proxied, 50), unroundedPercentile(floor, 50)];
      const latencyRatio = proxiedP50 / floorP50;
      ctx.log(`  small GET p50: preview ${round(proxiedP50, 2)} ms, direct ${round(floorP50, 2)} ms (×${latencyRatio.toFixed(2)})`);

      const bulkPreview: number[] = [];
      const bulkDirect: number[] = [];
      for (let i = 0; i < BULK_ROUNDS; i++) {
        const a = await viaPreview(api, host, `/big?mib=${BULK_MIB}`);
        const b = await direct(runtime, sandbox.id, `/big?mib=${BULK_MIB}`);
        if (a.bytes !== BULK_MIB * 1024 * 1024) throw new Error(`the preview's download was ${a.bytes} bytes`);
        bulkPreview.push(BULK_MIB / (a.ms / 1000));
        bulkDirect.push(BULK_MIB / (b.ms / 1000));
      }
      const throughputRatio = unroundedPercentile(bulkPreview, 50) / unroundedPercentile(bulkDirect, 50);
      ctx.log(`  ${BULK_MIB} MiB download: preview ${percentile(bulkPreview, 50)} MiB/s, direct ${percentile(bulkDirect, 50)} MiB/s (${Math.round(throughputRatio * 100)}%)`);

      const path = `/v1/sandboxes/${sandbox.id}`;
      await apiLatencies(stack.url, key, path, WARMUP);
      const quiet = await apiLatencies(stack.url, key, path, API_CALLS);
      /** The API's latencies while FLOOD connections download through the preview from `web`. */
      const floodedVia = async (web: URL) => {
        const url = new URL(preview.url);
        url.port = web.port;
        // From processes of their own (curl resolves *.localhost itself), so that reading the
        // flood costs this process, which times the API, nothing.
        for (let i = 0; i < FLOOD; i++) {
          const child = spawn('sh', ['-c', `while :; do curl -sf -o /dev/null '${url.href}big?mib=${FLOOD_MIB}' || sleep 0.1; done`], { stdio: 'ignore', detached: true });
          flood.push(child);
        }
        await new Promise((r) => setTimeout(r, 2000));
        const latencies = await apiLatencies(stack.url, key, path, API_CALLS);
        // The flood was really on: a download through the preview in the middle of it.
        const during = await viaPreview(web, host, `/big?mib=${FLOOD_MIB}`);
        for (const child of flood.splice(0)) if (child.pid) process.kill(-child.pid, 'SIGKILL');
        return { latencies, duringMiBs: round(FLOOD_MIB / (during.ms / 1000)) };
      };
      // One web serving both (npm start), then the deployment docs/deploy.md gives heavy preview
      // traffic: a second web of the same image carries the previews' hosts.
      const shared = await floodedVia(api);
      await new Promise((r) => setTimeout(r, 2000));
      const apart = await floodedVia(new URL(stack.urls[1]!));
      const sharedRatio = unroundedPercentile(shared.latencies, 99) / unroundedPercentile(quiet, 99);
      const apartRatio = unroundedPercentile(apart.latencies, 99) / unroundedPercentile(quiet, 99);
      ctx.log(
        `  GET ${path.replace(sandbox.id, '{id}')} p99: quiet ${percentile(quiet, 99)} ms; flood through the same web ${percentile(shared.latencies, 99)} ms (×${sharedRatio.toFixed(2)}, a download during it ${shared.duringMiBs} MiB/s); ` +
          `through a second web ${percentile(apart.latencies, 99)} ms (×${apartRatio.toFixed(2)}, ${apart.duringMiBs} MiB/s)`,
      );

      const rows: BenchRow[] = [
        {
          subject: 'floor: GET of 11 bytes, runtime.openPort from the bench process, fresh connection each',
          figures: { n: floor.length, 'p50 ms': round(floorP50, 2), 'p99 ms': percentile(floor, 99) },
          detail: { samples: floor.map((v) => round(v)) },
        },
        {
          subject: 'the same GET through the preview (public), fresh connection each',
          figures: { n: proxied.length, 'p50 ms': round(proxiedP50, 2), 'p99 ms': percentile(proxied, 99), 'preview / floor p50': `×${latencyRatio.toFixed(2)}` },
          goal: { text: `p50 ≤ ${LATENCY_GOAL}× the floor's`, met: latencyRatio <= LATENCY_GOAL },
          detail: { samples: proxied.map((v) => round(v)) },
        },
        {
          subject: `floor: ${BULK_MIB} MiB download, runtime.openPort`,
          figures: { n: bulkDirect.length, 'MiB/s p50': round(percentile(bulkDirect, 50)) },
          detail: { samples: bulkDirect.map((v) => round(v)) },
        },
        {
          subject: `the same download through the preview`,
          figures: { n: bulkPreview.length, 'MiB/s p50': round(percentile(bulkPreview, 50)), 'of the floor': `${Math.round(throughputRatio * 100)}%` },
          goal: { text: `≥ ${THROUGHPUT_GOAL * 100}% of the floor's throughput`, met: throughputRatio >= THROUGHPUT_GOAL },
          detail: { samples: bulkPreview.map((v) => round(v)) },
        },
        {
          subject: `API GET /v1/sandboxes/{id}, sequential, quiet`,
          figures: { n: quiet.length, 'p50 ms': percentile(quiet, 50), 'p99 ms': percentile(quiet, 99) },
          detail: { samples: quiet.map((v) => round(v)) },
        },
        {
          subject: `API GET /v1/sandboxes/{id}, sequential, while ${FLOOD} connections download ${FLOOD_MIB} MiB after ${FLOOD_MIB} MiB through a preview served by the same web`,
          figures: { n: shared.latencies.length, 'p50 ms': percentile(shared.latencies, 50), 'p99 ms': percentile(shared.latencies, 99), 'flooded / quiet p99': `×${sharedRatio.toFixed(2)}` },
          detail: { samples: shared.latencies.map((v) => round(v)), downloadDuringMiBs: shared.duringMiBs },
        },
        {
          subject: `the same, the preview's hosts served by a second web (docs/deploy.md, heavy preview traffic)`,
          figures: { n: apart.latencies.length, 'p50 ms': percentile(apart.latencies, 50), 'p99 ms': percentile(apart.latencies, 99), 'flooded / quiet p99': `×${apartRatio.toFixed(2)}` },
          goal: { text: `p99 ≤ ${API_P99_GOAL}× quiet`, met: apartRatio <= API_P99_GOAL },
          detail: { samples: apart.latencies.map((v) => round(v)), downloadDuringMiBs: apart.duringMiBs },
        },
      ];
      return rows;
    } finally {
      for (const child of flood) if (child.pid) process.kill(-child.pid, 'SIGKILL');
      await runtime.close();
      await stack.stop();
    }
  },
};
