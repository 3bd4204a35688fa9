import { readFileSync, realpathSync } from 'node:fs';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { call, callOk, median, percentile, unroundedPercentile, round, startStack, type SandboxObject } from './stack.ts';
import { startNetnsHost } from '../scripts/netns-host.ts';
import { startTestDns } from '../scripts/test-dns.ts';
import { makeTestCertificates } from '../scripts/test-tls.ts';
import { createdWithNetwork, egressProcessRss, rotated, TLS_BULK, TLS_SMALL_GETS } from './egress-shared.ts';

// Brokered credentials in the way of a sandbox's HTTPS (docs/api.md, "Secrets"): a host outside
// this one (a network namespace on a documentation range, scripts/netns-host.ts) serving HTTPS with
// a certificate of the benchmark's own authority, reached by one local sandbox with egress `all`
// and no brokering (the floor: it trusts that authority, and connects to the host's address), and
// by one whose secret is brokered for the host's name (its TLS ends at Paddock's egress, which adds
// the header and goes on over TLS of its own). Each small request is a fresh TLS connection, timed
// in the sandbox by the same program; the name is looked up once (lookups are `bench egress`'s).

const COUNT = Number(process.env.BENCH_BROKERED_COUNT ?? 200);
const BULK_MIB = Number(process.env.BENCH_BROKERED_BULK_MIB ?? 256);
const ROUNDS = 5;
const LATENCY_GOAL = 1.3;
const THROUGHPUT_GOAL = 0.7;
const NAME = 'brokered.bench.paddock.example';

export const brokeredBenchmark: Benchmark = {
  name: 'brokered',
  summary:
    `a local sandbox's HTTPS to a brokered host (its TLS ended at Paddock's egress, a header added, TLS again upstream) against the same requests with egress all and no brokering: ` +
    `p50 of a small GET, ${COUNT} fresh connections in ${ROUNDS} alternated rounds (goal ≤ ${LATENCY_GOAL}×); a ${BULK_MIB} MiB download, 3 rounds (goal ≥ ${THROUGHPUT_GOAL * 100}%)`,
  async run(ctx) {
    if (process.getuid?.() !== 0) throw new Error('the brokered benchmark needs root (a network namespace, and sandboxes with network)');
    const certificates = makeTestCertificates([NAME]);
    const host = await startNetnsHost({ range: '203.0.113', tls: { cert: certificates.cert, key: certificates.key } });
    const dns = await startTestDns();
    dns.set(NAME, [host.address], 300);
    const stack = await startStack(ctx, 'brokered', { PADDOCK_EGRESS_RESOLVERS: dns.address, PADDOCK_EGRESS_UPSTREAM_CA: certificates.caFile });
    try {
      const key = await mintApiKey(stack.url);
      const open = await createdWithNetwork(stack.url, key, { egress: 'all' });
      const brokered = await createdWithNetwork(stack.url, key, { egress: { allow: [NAME] } });
      await callOk(stack.url, key, 'POST', '/v1/secrets', { name: 'BENCH_TOKEN', value: 'bench-token-value', sandboxId: brokered.id, inject: { hosts: [NAME] } });
      // The floor's sandbox checks the host's certificate with the benchmark's authority, as the egress does upstream.
      await callOk(stack.url, key, 'POST', `/v1/sandboxes/${open.id}/exec`, { command: ['sh', '-c', 'cat > /workspace/ca.pem'], stdin: readFileSync(certificates.caFile, 'utf8') });
      const python = async (sandbox: SandboxObject, script: string, args: (string | number)[]) => {
        const res = await callOk(stack.url, key, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, { command: ['python3', '-c', script, ...args.map(String)], timeoutSeconds: 300 });
        const out = res.body as { exitCode: number | null; stdout: string; stderr: string };
        if (out.exitCode !== 0) throw new Error(`python in ${sandbox.id} exited ${out.exitCode}: ${out.stderr}`);
        return out.stdout.trim();
      };
      // The brokered sandbox's address for the name: its own resolver's answer (the egress's), once.
      const brokerAddress = await python(brokered, `import socket; print(socket.gethostbyname(${JSON.stringify(NAME)}))`, []);
      const sandboxes = { open, brokered };
      const args = (which: keyof typeof sandboxes) => (which === 'open' ? [host.address, NAME] : [brokerAddress, NAME]);
      const cafile = (which: keyof typeof sandboxes) => (which === 'open' ? '/workspace/ca.pem' : '');
      const small = { open: [] as number[], brokered: [] as number[] };
      for (const which of ['open', 'brokered'] as const) await python(sandboxes[which], TLS_SMALL_GETS, [...args(which), 20, cafile(which)]);
      for (let round = 0; round < ROUNDS; round++) {
        for (const which of rotated(['open', 'brokered'] as const, round)) {
          small[which].push(...(JSON.parse(await python(sandboxes[which], TLS_SMALL_GETS, [...args(which), Math.ceil(COUNT / ROUNDS), cafile(which)])) as number[]));
        }
      }
      const bulk = { open: [] as number[], brokered: [] as number[] };
      for (let round = 0; round < 3; round++) {
        for (const which of rotated(['open', 'brokered'] as const, round)) bulk[which].push(Number(await python(sandboxes[which], TLS_BULK, [...args(which), BULK_MIB, cafile(which)])));
      }
      const requests = await host.requests();
      const injected = requests.filter((r) => r.headers.some((h, i) => i % 2 === 1 && h === 'Bearer bench-token-value')).length;
      const latencyRatio = unroundedPercentile(small.brokered, 50) / unroundedPercentile(small.open, 50);
      const throughputRatio = median(bulk.brokered) / median(bulk.open);
      const brokerRssMb = egressProcessRss(realpathSync(stack.dataDir));
      ctx.log(`  small HTTPS GET p50: egress all ${percentile(small.open, 50)} ms, brokered ${percentile(small.brokered, 50)} ms (×${latencyRatio.toFixed(2)}); ${injected} requests carried the header`);
      ctx.log(`  ${BULK_MIB} MiB download: egress all ${median(bulk.open).toFixed(1)} MiB/s, brokered ${median(bulk.brokered).toFixed(1)} MiB/s (${Math.round(throughputRatio * 100)}%); the egress process ${brokerRssMb} MB resident`);
      if (injected < small.brokered.length) throw new Error(`only ${injected} of the brokered sandbox's ${small.brokered.length} requests carried the header`);
      const rows: BenchRow[] = [
        { subject: 'floor: small HTTPS GET from a sandbox with egress all, a fresh TLS connection each', figures: { n: small.open.length, 'p50 ms': percentile(small.open, 50), 'p99 ms': percentile(small.open, 99) } },
        {
          subject: "the same GET from a sandbox whose secret is brokered for the host: TLS to Paddock's egress, the header added, TLS upstream",
          figures: { n: small.brokered.length, 'p50 ms': percentile(small.brokered, 50), 'p99 ms': percentile(small.brokered, 99), 'brokered / all p50': `×${latencyRatio.toFixed(2)}` },
          goal: { text: `p50 ≤ ${LATENCY_GOAL}× the floor's`, met: latencyRatio <= LATENCY_GOAL },
        },
        { subject: `floor: ${BULK_MIB} MiB HTTPS download, egress all`, figures: { n: bulk.open.length, 'MiB/s median': round(median(bulk.open)) } },
        {
          subject: 'the same download brokered',
          figures: { n: bulk.brokered.length, 'MiB/s median': round(median(bulk.brokered)), 'of the floor': `${Math.round(throughputRatio * 100)}%`, 'egress process MB': brokerRssMb },
          goal: { text: `≥ ${THROUGHPUT_GOAL * 100}% of the floor's throughput`, met: throughputRatio >= THROUGHPUT_GOAL },
        },
      ];
      for (const sandbox of [open, brokered]) await call(stack.url, key, 'DELETE', `/v1/sandboxes/${sandbox.id}`);
      return rows;
    } finally {
      await stack.stop();
      dns.close();
      host.close();
      certificates.remove();
    }
  },
};
