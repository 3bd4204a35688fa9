import { join } from 'node:path';
import type { Benchmark, BenchRow } from './types.ts';
import { median, percentile, round, unroundedPercentile } from './stack.ts';
import { rotated, rssMb, TLS_BULK, TLS_SMALL_GETS } from './egress-shared.ts';
import { linkNetnsHosts, startNetnsHost } from '../scripts/netns-host.ts';
import { startTestDns } from '../scripts/test-dns.ts';
import { makeTestCertificates } from '../scripts/test-tls.ts';
import { startGatewayFixture } from '../test/k8s-standin/gateway.ts';
import { newId } from '../shared/ids.ts';

// Paddock's egress gateway on Kubernetes in the way of a sandbox pod's HTTPS (docs/deploy.md,
// "Egress gateway"): the gateway as deployed (workers/egress-gateway.ts) on this host, a "pod"
// (a network namespace on 203.0.113.x, known to the gateway through the Kubernetes API stand-in
// as the pod of a sandbox whose policy names the host) and a host outside (198.51.100.x) serving
// HTTPS with a certificate of the benchmark's own authority. The floor is the same program in the
// pod reaching the host straight, over a link of their own (egress `all`: a route out); then
// through the gateway by name, its TLS passed through; then to a name whose credential the
// gateway adds (TLS ended at the gateway, TLS again upstream). Each small request is a fresh TLS
// connection to an address given (names are looked up once, as in `bench brokered`).

const COUNT = Number(process.env.BENCH_GATEWAY_COUNT ?? 200);
const BULK_MIB = Number(process.env.BENCH_GATEWAY_BULK_MIB ?? 256);
const ROUNDS = 5;
const LATENCY_GOAL = 1.3;
const THROUGHPUT_GOAL = 0.7;
const NAME = 'passed.gateway.bench.paddock.example';
const BROKERED = 'brokered.gateway.bench.paddock.example';

export const gatewayBenchmark: Benchmark = {
  name: 'gateway',
  summary:
    `a Kubernetes sandbox pod's HTTPS through Paddock's egress gateway (passed through by its server name; brokered: a header added) against the same requests straight out: ` +
    `p50 of a small GET, ${COUNT} fresh connections in ${ROUNDS} alternated rounds (goal ≤ ${LATENCY_GOAL}×); a ${BULK_MIB} MiB download, 3 rounds (goal ≥ ${THROUGHPUT_GOAL * 100}%)`,
  async run(ctx) {
    if (process.getuid?.() !== 0) throw new Error('the gateway benchmark needs root (network namespaces)');
    const certificates = makeTestCertificates([NAME, BROKERED]);
    const host = await startNetnsHost({ range: '198.51.100', tls: { cert: certificates.cert, key: certificates.key } });
    const pod = await startNetnsHost({ range: '203.0.113' });
    const link = linkNetnsHosts(pod, host);
    const dns = await startTestDns();
    for (const name of [NAME, BROKERED]) dns.set(name, [host.address], 300);
    const world = await startGatewayFixture({
      podAddress: pod.address,
      address: pod.hostEnd,
      resolvers: dns.address,
      upstreamCa: certificates.caFile,
      nodeFlags: ctx.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(ctx.dir, 'profiles', 'gateway')}`] : [],
    });
    const runtime = world.runtime;
    try {
      const id = newId('sbx');
      await runtime.create({ id, accountId: newId('acct'), capSeconds: 1800, network: { egress: { allow: [NAME, BROKERED] } } });
      await runtime.broker!(id, [{ hosts: [BROKERED], header: 'Authorization', value: 'Bearer bench-token-value' }]);
      // Time for the gateway's watches to hear of the pod, its policy and its credential.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const python = async (script: string, args: (string | number)[]) => {
        const ran = await pod.run(['python3', '-c', script, ...args.map(String)]);
        if (ran.code !== 0) throw new Error(`python in the pod exited ${ran.code}: ${ran.stderr}`);
        return ran.stdout.trim();
      };
      const paths = {
        straight: [host.address, NAME, certificates.caFile],
        passed: [pod.hostEnd, NAME, certificates.caFile],
        brokered: [pod.hostEnd, BROKERED, world.egressCa],
      } as const;
      type Path = keyof typeof paths;
      const order: Path[] = ['straight', 'passed', 'brokered'];
      const gets = (path: Path, n: number) => python(TLS_SMALL_GETS, [paths[path][0], paths[path][1], n, paths[path][2]]);
      for (const path of order) await gets(path, 20);
      const small: Record<Path, number[]> = { straight: [], passed: [], brokered: [] };
      for (let round = 0; round < ROUNDS; round++) {
        for (const path of rotated(order, round)) small[path].push(...(JSON.parse(await gets(path, Math.ceil(COUNT / ROUNDS))) as number[]));
      }
      const idleRssMb = rssMb(world.pid) ?? 0;
      const bulk: Record<Path, number[]> = { straight: [], passed: [], brokered: [] };
      for (let round = 0; round < 3; round++) {
        for (const path of rotated(order, round)) bulk[path].push(Number(await python(TLS_BULK, [paths[path][0], paths[path][1], BULK_MIB, paths[path][2]])));
      }
      const injected = (await host.requests()).filter((r) => r.headers.some((h, i) => i % 2 === 1 && h === 'Bearer bench-token-value')).length;
      if (injected < small.brokered.length) throw new Error(`only ${injected} of ${small.brokered.length} brokered requests carried the header`);
      const gatewayRssMb = rssMb(world.pid) ?? 0;
      const latency = (path: Path) => unroundedPercentile(small[path], 50) / unroundedPercentile(small.straight, 50);
      const throughput = (path: Path) => median(bulk[path]) / median(bulk.straight);
      for (const path of order) {
        ctx.log(`  ${path}: small HTTPS GET p50 ${percentile(small[path], 50)} ms (×${latency(path).toFixed(2)}), ${BULK_MIB} MiB at ${median(bulk[path]).toFixed(1)} MiB/s (${Math.round(throughput(path) * 100)}%)`);
      }
      ctx.log(`  the gateway ${idleRssMb} MB resident after the small requests, ${gatewayRssMb} MB after the downloads`);
      const rows: BenchRow[] = [
        { subject: 'floor: small HTTPS GET from a pod straight out, a fresh TLS connection each', figures: { n: small.straight.length, 'p50 ms': percentile(small.straight, 50), 'p99 ms': percentile(small.straight, 99) } },
        ...(['passed', 'brokered'] as const).map((path): BenchRow => ({
          subject: path === 'passed' ? 'the same GET through the egress gateway, passed through by its server name' : "the same GET to a brokered host: TLS ended at the gateway, the header added, TLS upstream",
          figures: { n: small[path].length, 'p50 ms': percentile(small[path], 50), 'p99 ms': percentile(small[path], 99), 'of the floor p50': `×${latency(path).toFixed(2)}` },
          goal: { text: `p50 ≤ ${LATENCY_GOAL}× the floor's`, met: latency(path) <= LATENCY_GOAL },
        })),
        { subject: `floor: ${BULK_MIB} MiB HTTPS download from a pod straight out`, figures: { n: bulk.straight.length, 'MiB/s median': round(median(bulk.straight)) } },
        ...(['passed', 'brokered'] as const).map((path): BenchRow => ({
          subject: path === 'passed' ? 'the same download through the egress gateway' : 'the same download brokered',
          figures: { n: bulk[path].length, 'MiB/s median': round(median(bulk[path])), 'of the floor': `${Math.round(throughput(path) * 100)}%`, 'gateway MB': gatewayRssMb },
          goal: { text: `≥ ${THROUGHPUT_GOAL * 100}% of the floor's throughput`, met: throughput(path) >= THROUGHPUT_GOAL },
        })),
      ];
      await runtime.destroy(id);
      return rows;
    } finally {
      await world.close();
      link.close();
      dns.close();
      pod.close();
      host.close();
      certificates.remove();
    }
  },
};
