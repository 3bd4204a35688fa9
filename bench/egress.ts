import { realpathSync } from 'node:fs';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { call, callOk, median, percentile, unroundedPercentile, round, startStack, type SandboxObject } from './stack.ts';
import { startNetnsHost } from '../scripts/netns-host.ts';
import { PYTHON_DNS, startTestDns } from '../scripts/test-dns.ts';
import { createdWithNetwork, egressProcessRss, PYTHON_DRAIN_RATE, PYTHON_TIMED_GETS, rotated } from './egress-shared.ts';

// A sandbox's egress policy in the way of its connections (docs/api.md, "Egress policy"): a host
// outside this one (a network namespace on a documentation range, scripts/netns-host.ts), reached
// by one local sandbox whose policy lists 64 rules (the host's the last, so every packet is held
// against all of them) and by one whose policy is `all`, in turns, by the same program in each.
// A third sandbox reaches the same host by a domain rule: each of its connections looks the name up
// first, through Paddock's resolver for it (a DNS server of the benchmark's own on loopback
// answers upstream), against the first two's connections by address.
// Then the API's p99 quiet, and while a fourth sandbox opens connections its policy refuses as
// fast as it can (the refusals are the kernel's, and their count the workers' sweep's).

const COUNT = Number(process.env.BENCH_EGRESS_COUNT ?? 200);
const BULK_MIB = Number(process.env.BENCH_EGRESS_BULK_MIB ?? 256);
const API_CALLS = Number(process.env.BENCH_EGRESS_API_CALLS ?? 300);
const ROUNDS = 5;
const LATENCY_GOAL = 1.3;
const THROUGHPUT_GOAL = 0.7;
const API_P99_GOAL = 2;

/** Fresh connections, one GET each (a name looked up each time), timed in the sandbox: the milliseconds of each, as JSON. */
const SMALL_GETS = `${PYTHON_TIMED_GETS}
import socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
timed_gets(n, lambda: socket.create_connection((host, port)), b"GET / HTTP/1.0\\r\\nHost: t\\r\\n\\r\\n")
`;

/** One download of /bulk/<MiB>, timed in the sandbox: MiB/s. */
const BULK = `${PYTHON_DRAIN_RATE}
import socket, sys, time
host, port, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = time.perf_counter()
s = socket.create_connection((host, port))
s.sendall(("GET /bulk/%d HTTP/1.0\\r\\nHost: t\\r\\n\\r\\n" % mib).encode())
drain_rate(s, mib, t)
`;

/** Connections its policy refuses, as fast as they fail, for `seconds`: how many, printed. */
const HAMMER = `
import socket, sys, time
host, seconds = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    try:
        socket.create_connection((host, 80 + n % 1000), timeout=1).close()
    except OSError:
        pass
    n += 1
print(n)
`;

/** DNS queries for names its policy refuses, as fast as they go, for `seconds`: how many were sent and answered, printed. */
const DNS_FLOOD = `${PYTHON_DNS}
import socket, sys, time
seconds = float(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
end = time.monotonic() + seconds
sent = answered = 0
while time.monotonic() < end:
    try:
        s.sendto(query(sent), ('10.0.2.3', 53))
        sent += 1
    except BlockingIOError:
        pass
    answered += drain(s)
print(sent, answered)
`;

export const egressBenchmark: Benchmark = {
  name: 'egress',
  summary:
    `a local sandbox reaching a host outside through an allow list of 64 rules, and by a domain rule (a lookup each time), against egress all: p50 of a small GET, ${COUNT} fresh connections in ${ROUNDS} alternated rounds (goal ≤ ${LATENCY_GOAL}×); ` +
    `a ${BULK_MIB} MiB download, 3 rounds (goal ≥ ${THROUGHPUT_GOAL * 100}%); the API's GET p99 while a sandbox opens refused connections as fast as it can (goal ≤ ${API_P99_GOAL}× quiet)`,
  async run(ctx) {
    if (process.getuid?.() !== 0) throw new Error('the egress benchmark needs root (a network namespace, and sandboxes with network)');
    const host = await startNetnsHost({ range: '203.0.113' });
    const dns = await startTestDns();
    dns.set(NAME, [host.address], 60);
    const stack = await startStack(ctx, 'egress', { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5', PADDOCK_EGRESS_RESOLVERS: dns.address });
    try {
      const key = await mintApiKey(stack.url);
      // 63 rules the host matches none of, then its own: a packet to it is held against them all.
      const others = Array.from({ length: 63 }, (_, i) => `198.51.100.${i * 4}/30:${1000 + i}`);
      const listed = await createdWithNetwork(stack.url, key, { egress: { allow: [...others, `${host.address}/32`] } });
      const open = await createdWithNetwork(stack.url, key, { egress: 'all' });
      const named = await createdWithNetwork(stack.url, key, { egress: { allow: [...others.slice(1), NAME] } });
      const python = async (sandbox: SandboxObject, script: string, args: (string | number)[], timeoutSeconds = 300) => {
        const res = await callOk(stack.url, key, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, { command: ['python3', '-c', script, ...args.map(String)], timeoutSeconds });
        const out = res.body as { exitCode: number | null; stdout: string; stderr: string };
        if (out.exitCode !== 0) throw new Error(`python in ${sandbox.id} exited ${out.exitCode}: ${out.stderr}`);
        return out.stdout.trim();
      };

      const sandboxes = { listed, open, named };
      /** Where each sandbox connects: the host's address, or its name. */
      const target = (which: keyof typeof sandboxes) => (which === 'named' ? NAME : host.address);
      const small = { listed: [] as number[], open: [] as number[], named: [] as number[] };
      for (const which of ['listed', 'open', 'named'] as const) await python(sandboxes[which], SMALL_GETS, [target(which), host.port, 20]);
      for (let round = 0; round < ROUNDS; round++) {
        for (const which of rotated(['listed', 'open', 'named'] as const, round)) {
          small[which].push(...(JSON.parse(await python(sandboxes[which], SMALL_GETS, [target(which), host.port, Math.ceil(COUNT / ROUNDS)])) as number[]));
        }
      }
      const bulk = { listed: [] as number[], open: [] as number[], named: [] as number[] };
      for (let round = 0; round < 3; round++) {
        for (const which of rotated(['listed', 'open', 'named'] as const, round)) bulk[which].push(Number(await python(sandboxes[which], BULK, [target(which), host.port, BULK_MIB])));
      }
      const latencyRatio = unroundedPercentile(small.listed, 50) / unroundedPercentile(small.open, 50);
      const throughputRatio = median(bulk.listed) / median(bulk.open);
      const namedLatencyRatio = unroundedPercentile(small.named, 50) / unroundedPercentile(small.open, 50);
      const namedThroughputRatio = median(bulk.named) / median(bulk.open);
      const resolverRssMb = egressProcessRss(realpathSync(stack.dataDir));
      ctx.log(`  small GET p50: allow list ${percentile(small.listed, 50)} ms, all ${percentile(small.open, 50)} ms (×${latencyRatio.toFixed(2)}); by name ${percentile(small.named, 50)} ms (×${namedLatencyRatio.toFixed(2)})`);
      ctx.log(`  ${BULK_MIB} MiB download: allow list ${median(bulk.listed).toFixed(1)} MiB/s, all ${median(bulk.open).toFixed(1)} MiB/s (${Math.round(throughputRatio * 100)}%); by name ${median(bulk.named).toFixed(1)} MiB/s (${Math.round(namedThroughputRatio * 100)}%)`);
      ctx.log(`  the host's resolver (one for every sandbox with domain rules): ${resolverRssMb} MB resident`);

      // The API quiet, then while a sandbox hammers destinations its policy refuses.
      const apiGets = async () => {
        const ms: number[] = [];
        for (let i = 0; i < API_CALLS; i++) ms.push((await callOk(stack.url, key, 'GET', `/v1/sandboxes/${open.id}`)).ms);
        return ms;
      };
      const quiet = await apiGets();
      const hammer = await createdWithNetwork(stack.url, key, { egress: { allow: [`${host.address}/32:${host.port}`] } });
      const seconds = 10;
      const hammering = python(hammer, HAMMER, [host.address, seconds], seconds + 30);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const busy = await apiGets();
      const refused = Number(await hammering);
      const apiRatio = unroundedPercentile(busy, 99) / unroundedPercentile(quiet, 99);
      ctx.log(`  API GET p99: quiet ${percentile(quiet, 99)} ms, during ${refused} refused connections ${percentile(busy, 99)} ms (×${apiRatio.toFixed(2)})`);

      // The same, while a sandbox with a domain rule floods the resolver with names it refuses;
      // and the named sandbox's lookups meanwhile, against its quiet ones.
      const flooder = await createdWithNetwork(stack.url, key, { egress: { allow: [NAME] } });
      const flooding = python(flooder, DNS_FLOOD, [seconds], seconds + 30);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const duringFlood = await apiGets();
      const neighbour = JSON.parse(await python(named, SMALL_GETS, [NAME, host.port, 50])) as number[];
      const [floodSent = 0, floodAnswered = 0] = (await flooding).split(' ').map(Number);
      const floodRatio = unroundedPercentile(duringFlood, 99) / unroundedPercentile(quiet, 99);
      const neighbourRatio = unroundedPercentile(neighbour, 50) / unroundedPercentile(small.named, 50);
      ctx.log(
        `  during a DNS flood (${floodSent} queries sent in ${seconds} s, ${floodAnswered} answered): API GET p99 ${percentile(duringFlood, 99)} ms (×${floodRatio.toFixed(2)}); ` +
          `another sandbox's GET by name p50 ${percentile(neighbour, 50)} ms (×${neighbourRatio.toFixed(2)} its quiet one)`,
      );

      const rows: BenchRow[] = [
        { subject: 'floor: small GET from a sandbox with egress all, fresh connection each', figures: { n: small.open.length, 'p50 ms': percentile(small.open, 50), 'p99 ms': percentile(small.open, 99) } },
        {
          subject: 'the same GET from a sandbox whose allow list has 64 rules, the host the last',
          figures: { n: small.listed.length, 'p50 ms': percentile(small.listed, 50), 'p99 ms': percentile(small.listed, 99), 'listed / all p50': `×${latencyRatio.toFixed(2)}` },
          goal: { text: `p50 ≤ ${LATENCY_GOAL}× the floor's`, met: latencyRatio <= LATENCY_GOAL },
        },
        { subject: `floor: ${BULK_MIB} MiB download, egress all`, figures: { n: bulk.open.length, 'MiB/s median': round(median(bulk.open)) } },
        {
          subject: `the same download through the allow list`,
          figures: { n: bulk.listed.length, 'MiB/s median': round(median(bulk.listed)), 'of the floor': `${Math.round(throughputRatio * 100)}%` },
          goal: { text: `≥ ${THROUGHPUT_GOAL * 100}% of the floor's throughput`, met: throughputRatio >= THROUGHPUT_GOAL },
        },
        {
          subject: `the same GET from a sandbox allowed by a domain rule (63 address rules before it), the name looked up through Paddock's resolver for each connection`,
          figures: { n: small.named.length, 'p50 ms': percentile(small.named, 50), 'p99 ms': percentile(small.named, 99), 'by name / all p50': `×${namedLatencyRatio.toFixed(2)}` },
          goal: { text: `p50 ≤ ${LATENCY_GOAL}× the floor's`, met: namedLatencyRatio <= LATENCY_GOAL },
        },
        {
          subject: `the same download by name`,
          figures: { n: bulk.named.length, 'MiB/s median': round(median(bulk.named)), 'of the floor': `${Math.round(namedThroughputRatio * 100)}%`, 'resolver MB': resolverRssMb },
          goal: { text: `≥ ${THROUGHPUT_GOAL * 100}% of the floor's throughput`, met: namedThroughputRatio >= THROUGHPUT_GOAL },
        },
        { subject: 'API GET /v1/sandboxes/{id}, sequential, quiet', figures: { n: quiet.length, 'p50 ms': percentile(quiet, 50), 'p99 ms': percentile(quiet, 99) } },
        {
          subject: `the same, while a sandbox opens refused connections as fast as it can (${refused} in ${seconds} s)`,
          figures: { n: busy.length, 'p50 ms': percentile(busy, 50), 'p99 ms': percentile(busy, 99), 'busy / quiet p99': `×${apiRatio.toFixed(2)}` },
          goal: { text: `p99 ≤ ${API_P99_GOAL}× quiet`, met: apiRatio <= API_P99_GOAL },
        },
        {
          subject: `the same, while a sandbox sends DNS queries for names its policy refuses as fast as it can (${floodSent} sent in ${seconds} s, ${floodAnswered} answered: its budget)`,
          figures: { n: duringFlood.length, 'p50 ms': percentile(duringFlood, 50), 'p99 ms': percentile(duringFlood, 99), 'busy / quiet p99': `×${floodRatio.toFixed(2)}` },
          goal: { text: `p99 ≤ ${API_P99_GOAL}× quiet`, met: floodRatio <= API_P99_GOAL },
        },
        {
          subject: `meanwhile, another sandbox's GET by name (its lookup through the same resolver)`,
          figures: { n: neighbour.length, 'p50 ms': percentile(neighbour, 50), 'p99 ms': percentile(neighbour, 99), 'flooded / quiet p50': `×${neighbourRatio.toFixed(2)}` },
        },
      ];
      for (const sandbox of [listed, open, named, hammer, flooder]) await call(stack.url, key, 'DELETE', `/v1/sandboxes/${sandbox.id}`);
      return rows;
    } finally {
      await stack.stop();
      dns.close();
      host.close();
    }
  },
};

/** The name the domain rule allows, answered by the benchmark's DNS server. */
const NAME = 'bench.paddock.example';
