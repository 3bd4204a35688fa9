import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';

// A host outside this one for the network tests and benchmarks: a network namespace of its own,
// joined to this host's by a veth pair on a documentation range (RFC 5737) that routes nowhere
// else, with web servers in it. Needs root.

/** A test host in a namespace of its own, at 198.51.100.x (or 203.0.113.x); the host end of its link at another x. */
export interface NetnsHost {
  /** Its network namespace's name. */
  netns: string;
  /**
   * Runs `argv` in its namespace (entered through its server's process, which holds the namespace
   * whatever becomes of its name under /run/netns), with `resolvConf` (a file) as the program's
   * /etc/resolv.conf where given: its exit code, its output, and how long it took.
   */
  run(argv: string[], resolvConf?: string): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }>;
  address: string;
  hostEnd: string;
  /** Its first server's port; `ports`, every server's. */
  port: number;
  ports: number[];
  /** Connections the test host's servers took. */
  served(): Promise<number>;
  /** With `tls`: the requests its HTTPS server on port 443 took, in order, with their headers as sent. */
  requests(): Promise<TlsRequest[]>;
  /** Its servers stopped, its namespace and link removed. */
  close(): void;
}

/** A request the test host's HTTPS server took. */
export interface TlsRequest {
  method: string;
  url: string;
  /** Raw, as sent: name, value, name, value… */
  headers: string[];
}

/** $1 namespace, $2 and $3 the veth's ends, $4 the /24: the two addresses of a free /30 of it, printed. */
const MAKE_HOST = `used=$(ip -o -4 addr show | grep -o " $4\\.[0-9]*" || true)
for base in $(seq 0 4 252 | shuf); do
  case "$used" in *" $4.$((base + 1))"*|*" $4.$((base + 2))"*) continue ;; esac
  ip netns add "$1"
  ip link add "$2" type veth peer name "$3"
  ip link set "$3" netns "$1"
  ip addr add "$4.$((base + 1))/30" dev "$2"
  ip link set "$2" up
  ip -n "$1" addr add "$4.$((base + 2))/30" dev "$3"
  ip -n "$1" link set "$3" up
  ip -n "$1" link set lo up
  echo "$4.$((base + 1)) $4.$((base + 2))"
  exit 0
done
exit 1`;

export async function startNetnsHost(
  options: {
    servers?: number;
    range?: '198.51.100' | '203.0.113';
    /** An HTTPS server on port 443 too, with this certificate (PEM): it records each request; /redirect/<url> answers 302 to https://<url>, /bulk/<MiB> that many MiB. */
    tls?: { cert: string; key: string };
    /** The port of its first web server (else any free one): 80, for a client that names none. */
    firstPort?: number;
    /** Fixed answers of the HTTPS server, by path (its query aside): what a package index or a repository serves. */
    pages?: Record<string, { type: string; body: string }>;
  } = {},
): Promise<NetnsHost> {
  const tag = randomBytes(4).toString('hex');
  const netns = `paddock-t-${tag}`;
  const [outer, inner] = [`pdk${tag}h`, `pdk${tag}n`];
  const range = options.range ?? '198.51.100';
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const remove = () => {
    for (const args of [['link', 'del', outer], ['netns', 'del', netns]]) {
      try {
        ip(...args);
      } catch {
        // already gone (the link goes with the namespace)
      }
    }
  };
  // Made under a lock of the whole host: `ip netns add` run twice at once can fail, and the /30
  // chosen (within a documentation /24) must be one no other run on this machine holds. A host
  // shared with other stacks, whose `ip netns add` takes no lock of ours, can still spoil one:
  // what was made is removed, and it is made again.
  const make = () =>
    execFileSync('flock', ['/tmp/paddock-test-hosts.lock', 'sh', '-ec', MAKE_HOST, 'make-test-host', netns, outer, inner, range], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  let made: string;
  for (let attempt = 1; ; attempt++) {
    try {
      made = make();
      break;
    } catch (err) {
      remove();
      if (attempt >= 3) throw err;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
  const [hostEnd = '', address = ''] = made.trim().split(' ');

  // Web servers inside it (`servers` of them, on ports of their own), that say how many
  // connections they took on each line of their stdin. /stream answers without end, a line every
  // 20 ms, for a download a change of policy cuts; /bulk/<MiB> that many MiB as fast as they go.
  const script = `
    const http = require('node:http');
    let served = 0;
    /** /bulk/<MiB>: that many MiB as fast as the connection takes them; whether it was that. */
    const bulk = (req, res) => {
      const asked = /^\\/bulk\\/([0-9]+)$/.exec(req.url);
      if (!asked) return false;
      const chunk = Buffer.alloc(1024 * 1024, 120);
      let left = Number(asked[1]);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': left * chunk.length });
      const pump = () => {
        while (left > 0) {
          left--;
          if (!res.write(chunk)) return res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return true;
    };
    const ports = [];
    for (let i = 0; i < ${options.servers ?? 1}; i++) {
      const server = http.createServer((req, res) => {
        if (bulk(req, res)) return;
        if (req.url !== '/stream') return res.end('hello from the test host\\n');
        res.writeHead(200, { 'content-type': 'text/plain' });
        const tick = setInterval(() => res.write('x'.repeat(1023) + '\\n'), 20);
        res.on('close', () => clearInterval(tick));
      });
      server.on('connection', () => served++);
      // A client that half-closes once its request is sent gets the whole answer, as from most
      // servers (node:http would end the answer at the client's end).
      server.httpAllowHalfOpen = true;
      server.listen(i === 0 ? ${options.firstPort ?? 0} : 0, ${JSON.stringify(address)}, () => {
        ports.push(server.address().port);
        if (ports.length === ${options.servers ?? 1}) console.log(ports.join(' '));
      });
    }
    const recorded = [];
    const tls = ${JSON.stringify(options.tls ?? null)};
    const pages = ${JSON.stringify(options.pages ?? {})};
    if (tls) {
      require('node:https').createServer(tls, (req, res) => {
        if (recorded.length < 10000) recorded.push({ method: req.method, url: req.url, headers: req.rawHeaders });
        const to = /^\\/redirect\\/(.+)$/.exec(req.url);
        if (to) {
          res.writeHead(302, { location: 'https://' + to[1] });
          return res.end();
        }
        if (bulk(req, res)) return;
        const pagePath = req.url.split('?')[0];
        const page = Object.hasOwn(pages, pagePath) ? pages[pagePath] : undefined;
        req.resume();
        if (page) {
          res.writeHead(200, { 'content-type': page.type, 'content-length': Buffer.byteLength(page.body) });
          return req.on('end', () => res.end(page.body));
        }
        req.on('end', () => res.end('hello over tls\\n'));
      }).listen(443, ${JSON.stringify(address)});
    }
    let stdinLine = '';
    process.stdin.on('data', (chunk) => {
      stdinLine += chunk;
      for (let at = stdinLine.indexOf('\\n'); at >= 0; at = stdinLine.indexOf('\\n')) {
        const asked = stdinLine.slice(0, at);
        stdinLine = stdinLine.slice(at + 1);
        console.log(asked === 'requests' ? JSON.stringify(recorded) : served);
      }
    });
    process.stdin.on('end', () => process.exit(0));`;
  const child: ChildProcess = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const close = () => {
    child.stdin?.end();
    child.kill();
    remove();
  };
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += String(chunk);
    for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      const next = waiting.shift();
      if (next) next(line);
      else lines.push(line);
    }
  });
  const nextLine = () =>
    lines.length > 0
      ? Promise.resolve(lines.shift()!)
      : Promise.race([
          new Promise<string>((resolve) => waiting.push(resolve)),
          once(child, 'exit').then(() => Promise.reject(new Error('the test host exited'))),
        ]);
  const ports = (await nextLine()).split(' ').map(Number);
  return {
    netns,
    async run(argv, resolvConf) {
      const started = Date.now();
      const entered = ['-t', String(child.pid), '-n'];
      const args =
        resolvConf === undefined
          ? [...entered, ...argv]
          : [...entered, 'unshare', '-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" /etc/resolv.conf && exec "$@"', resolvConf, ...argv];
      const program = spawn('nsenter', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      program.stdout!.on('data', (chunk: Buffer) => (stdout += String(chunk)));
      program.stderr!.on('data', (chunk: Buffer) => (stderr += String(chunk)));
      const [code] = (await once(program, 'exit')) as [number | null];
      return { code, stdout, stderr, ms: Date.now() - started };
    },
    address,
    hostEnd,
    port: ports[0]!,
    ports,
    async served() {
      child.stdin!.write('\n');
      return Number(await nextLine());
    },
    async requests() {
      child.stdin!.write('requests\n');
      return JSON.parse(await nextLine()) as TlsRequest[];
    },
    close,
  };
}

/** $1 and $2 the namespaces, $3 and $4 the veth's ends, $5 and $6 their main addresses: a link on a free /30 of 192.0.2.0/24, each routing the other's main address over it. */
const LINK_HOSTS = `used=$( (ip -n "$1" -o -4 addr show; ip -n "$2" -o -4 addr show; ls /run/netns | while read ns; do ip -n "$ns" -o -4 addr show 2>/dev/null; done) | grep -o " 192\\.0\\.2\\.[0-9]*" || true)
for base in $(seq 0 4 252 | shuf); do
  case "$used" in *" 192.0.2.$((base + 1))"*|*" 192.0.2.$((base + 2))"*) continue ;; esac
  ip link add "$3" netns "$1" type veth peer name "$4" netns "$2"
  ip -n "$1" addr add "192.0.2.$((base + 1))/30" dev "$3"
  ip -n "$2" addr add "192.0.2.$((base + 2))/30" dev "$4"
  ip -n "$1" link set "$3" up
  ip -n "$2" link set "$4" up
  ip -n "$1" route add "$6/32" via "192.0.2.$((base + 2))"
  ip -n "$2" route add "$5/32" via "192.0.2.$((base + 1))"
  exit 0
done
exit 1`;

/**
 * A direct link between two test hosts' namespaces (a second veth pair, on a documentation /30),
 * each reaching the other's address over it rather than through this host: what a route straight
 * out would be. Gone with either namespace, or with close().
 */
export function linkNetnsHosts(a: NetnsHost, b: NetnsHost): { close(): void } {
  const tag = randomBytes(4).toString('hex');
  const [aEnd, bEnd] = [`pdk${tag}a`, `pdk${tag}b`];
  execFileSync('flock', ['/tmp/paddock-test-hosts.lock', 'sh', '-ec', LINK_HOSTS, 'link-test-hosts', a.netns, b.netns, aEnd, bEnd, a.address, b.address], { stdio: ['ignore', 'ignore', 'pipe'] });
  return {
    close() {
      try {
        execFileSync('ip', ['-n', a.netns, 'link', 'del', aEnd], { stdio: 'ignore' });
      } catch {
        // gone with its namespace
      }
    },
  };
}
