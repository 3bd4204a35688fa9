// `node bench/profile-window.ts FILE.cpuprofile [SKIP_SECONDS] [WINDOW_MS]`: the busiest window of
// a `--cpu-prof` profile (BENCH_PROFILE=1) after its first SKIP_SECONDS, by self and inclusive
// time, to see what a process did in a short burst that a whole-run summary
// (bench/profile-summary.ts) averages away. Wall-clock samples, as there.
import { readProfile } from './cpu-profile.ts';

const [file, skipArg, windowArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-window.ts FILE.cpuprofile [SKIP_SECONDS] [WINDOW_MS]\n');
  process.exit(2);
}
const profile = readProfile(file);
const skip = Number(skipArg ?? 0) * 1e6;
const windowUs = Number(windowArg ?? 300) * 1000;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const times: number[] = [];
let t = profile.startTime;
for (const delta of profile.timeDeltas) times.push((t += delta));
const idle = (id: number) => ['(idle)', '(program)'].includes(byId.get(id)!.callFrame.functionName);
const duration = (i: number) => (i + 1 < times.length ? times[i + 1]! - times[i]! : 0);
const name = (id: number) => {
  const f = byId.get(id)!.callFrame;
  return `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
};

let best = { busy: 0, from: 0, to: -1 };
let from = 0;
let busy = 0;
for (let i = 0; i < times.length; i++) {
  if (!idle(profile.samples[i]!)) busy += duration(i);
  while (times[i]! - times[from]! > windowUs) if (!idle(profile.samples[from++]!)) busy -= duration(from - 1);
  if (busy > best.busy && times[from]! - profile.startTime > skip) best = { busy, from, to: i };
}
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
for (let i = best.from; i <= best.to; i++) {
  const id = profile.samples[i]!;
  if (idle(id)) continue;
  self.set(name(id), (self.get(name(id)) ?? 0) + duration(i));
  const seen = new Set<string>();
  for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
    if (seen.has(name(x))) continue;
    seen.add(name(x));
    inclusive.set(name(x), (inclusive.get(name(x)) ?? 0) + duration(i));
  }
}
const top = (m: Map<string, number>, n: number) =>
  [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${(v / 1000).toFixed(1).padStart(7)} ms  ${k}`).join('\n');
process.stdout.write(
  `busiest ${windowUs / 1000} ms: ${(best.busy / 1000).toFixed(1)} ms busy, from ${((times[best.from]! - profile.startTime) / 1e6).toFixed(2)} s\n` +
    `--- self\n${top(self, 25)}\n--- inclusive\n${top(inclusive, 45)}\n`,
);
