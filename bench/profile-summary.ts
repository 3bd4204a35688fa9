// `node bench/profile-summary.ts FILE.cpuprofile`: where a `--cpu-prof` profile's time goes,
// by package (self time) and by function (inclusive time), to read a BENCH_PROFILE=1 run
// without a browser. Idle time is left out of the shares: it is time the process waited.
// V8 samples wall-clock time: while the process is preempted (autocannon, PostgreSQL and Redis
// share the cores) samples land on the frame it stopped in, usually a socket write, so on a busy
// machine writeBuffer/writeUtf8String look far costlier than they are; `perf record -e cpu-clock`
// with `node --perf-basic-prof` counts CPU only (docs/benchmarks.md, "Measurements behind the design").
import { readProfile, type ProfileNode } from './cpu-profile.ts';
import { relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const file = process.argv[2];
const top = Number(process.argv[3] ?? 40);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.ts FILE.cpuprofile [TOP]\n');
  process.exit(2);
}
const profile = readProfile(file);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

function where(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (!url) return functionName || '(anonymous)';
  if (url.startsWith('node:')) return 'node internals';
  const path = url.startsWith('file://') ? relative(root, new URL(url).pathname) : url;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  return pkg ? pkg[1]! : path;
}

function label(node: ProfileNode): string {
  const { url, functionName, lineNumber } = node.callFrame;
  const path = url.startsWith('file://') ? relative(root, new URL(url).pathname).replace(/^node_modules\//, '') : url;
  return `${functionName || '(anonymous)'} ${path}:${lineNumber + 1}`;
}

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let busy = 0;
profile.samples.forEach((id, i) => {
  const us = profile.timeDeltas[i] ?? 0;
  const node = byId.get(id)!;
  if (node.callFrame.functionName === '(idle)') return;
  busy += us;
  self.set(where(node), (self.get(where(node)) ?? 0) + us);
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const key = label(byId.get(at)!);
    if (seen.has(key)) continue; // recursion counts once
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + us);
  }
});

const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
const out: string[] = [];
const section = (title: string, map: Map<string, number>, n: number) => {
  out.push('', title);
  for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) out.push(`${pct(us)}  ${k}`);
};
const total = profile.timeDeltas.reduce((a, b) => a + b, 0);
out.push(`busy ${(busy / 1e6).toFixed(1)} s of ${(total / 1e6).toFixed(1)} s`);
section('self time by package or file', self, 25);
section('inclusive time by function', inclusive, top);
process.stdout.on('error', () => process.exit(0)); // piped into head
process.stdout.write(`${out.join('\n')}\n`);
