import { readdirSync, readFileSync } from 'node:fs';
import { callOk, type SandboxObject } from './stack.ts';
import { rssOf } from './paddock-processes.ts';

// What the egress benchmarks (egress.ts, brokered.ts, gateway.ts) share: sandboxes made with a policy, the
// turns they take, and the memory of the host's egress process.

/** A running sandbox with the given `network`. */
export async function createdWithNetwork(url: string, key: string, network: unknown): Promise<SandboxObject> {
  const sandbox = (await callOk(url, key, 'POST', '/v1/sandboxes', { network })).body as SandboxObject;
  if (sandbox.status !== 'running') throw new Error(`sandbox ${sandbox.id} is ${sandbox.status}: ${JSON.stringify(sandbox)}`);
  return sandbox;
}

/** The order of a round: each sandbox first in turn. */
export function rotated<T>(items: readonly T[], round: number): T[] {
  return items.map((_, i) => items[(i + round) % items.length]!);
}

/** The resident memory (MB, to 0.1) of a process; undefined when it cannot be read. */
export function rssMb(pid: number): number | undefined {
  const bytes = rssOf(pid);
  return bytes === undefined ? undefined : Math.round(bytes / 104_857.6) / 10;
}

/** The resident memory (MB) of the host's egress process (resolver and broker) for the stack's data directory, found in /proc. */
export function egressProcessRss(dataDir: string): number {
  for (const pid of readdirSync('/proc').filter((entry) => /^[0-9]+$/.test(entry))) {
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!cmdline.includes(dataDir) || !cmdline.includes('egress-resolver-main')) continue;
    const mb = rssMb(Number(pid));
    if (mb !== undefined) return mb;
  }
  return 0;
}


/** Python: reads the socket `s` to its end and prints the MiB a second since `t`; exits when fewer than `mib` MiB came. */
export const PYTHON_DRAIN_RATE = `
import sys, time
def drain_rate(s, mib, t):
    got = 0
    buf = bytearray(1 << 20)
    while True:
        n = s.recv_into(buf)
        if not n:
            break
        got += n
    elapsed = time.perf_counter() - t
    if got < mib * 1048576:
        sys.exit("short download: %d bytes" % got)
    print(mib / elapsed)
`;

/**
 * Python: `timed_gets(n, connect, request)` makes n fresh connections (`connect()`), sends each
 * `request`, reads to the end, closes, and prints the milliseconds of each, as JSON.
 */
export const PYTHON_TIMED_GETS = `
import json, time
def timed_gets(n, connect, request):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        s = connect()
        s.sendall(request)
        while s.recv(65536):
            pass
        s.close()
        out.append((time.perf_counter() - t) * 1000)
    print(json.dumps(out))
`;

/** Fresh TLS connections, one GET each, to `address` as `name`, checked with `cafile` (or the system's authorities): the milliseconds of each, as JSON. */
export const TLS_SMALL_GETS = `${PYTHON_TIMED_GETS}
import socket, ssl, sys
address, name, n, cafile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
context = ssl.create_default_context(cafile=cafile or None)
connect = lambda: context.wrap_socket(socket.create_connection((address, 443)), server_hostname=name)
timed_gets(n, connect, ("GET / HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n" % name).encode())
`;

/** One download of /bulk/<MiB> over TLS: MiB/s. */
export const TLS_BULK = `${PYTHON_DRAIN_RATE}
import socket, ssl, sys, time
address, name, mib, cafile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
context = ssl.create_default_context(cafile=cafile or None)
t = time.perf_counter()
s = context.wrap_socket(socket.create_connection((address, 443)), server_hostname=name)
s.sendall(("GET /bulk/%d HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n" % (mib, name)).encode())
drain_rate(s, mib, t)
`;
