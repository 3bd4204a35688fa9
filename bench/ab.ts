// `npm run bench:ab -- OTHER_CHECKOUT [PATH]`: this checkout's web against another checkout's (a
// `git worktree add` of an earlier commit, its node_modules a link to this one's), on GET PATH
// (default /v1/account) with one API key, rounds alternated with the floor's. Prints, per subject
// and round, req/s and the CPU per request of the web, of every PostgreSQL and Redis process, and
// of the client. A change's gain on one request is often smaller than this machine's drift between
// two runs: only subjects measured in the same run, alternated, compare. BENCH_AB_REFUSE=1 gives
// the key an empty account bucket, to compare what a 429 costs. Settings: BENCH_* (docs/benchmarks.md).
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startServices } from '../scripts/services.ts';
import { migrateDatabase } from '../migrations/migrate.ts';
import { combine, loadSettingsFromEnv, measure, type LoadFigures, type Target } from './load.ts';
import { killAll, type NodeProcess } from './processes.ts';
import { mintApiKey, startFloor, startPaddock } from './targets.ts';

const [other, path = '/v1/account'] = process.argv.slice(2);
if (!other) {
  process.stderr.write('usage: npm run bench:ab -- OTHER_CHECKOUT [PATH]\n');
  process.exit(2);
}
const refuse = process.env.BENCH_AB_REFUSE === '1';
const dir = resolve(import.meta.dirname, '..', '.paddock/bench');
const log = (line: string) => process.stderr.write(`${line}\n`);

/** CPU microseconds so far of every process whose name starts with one of `names`, by pid. */
function cpuByPid(names: string[]): Map<string, { name: string; us: number }> {
  const out = new Map<string, { name: string; us: number }>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const name = names.find((n) => comm.startsWith(n));
    if (!name) continue;
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    out.set(pid, { name, us: (Number(fields[11]) + Number(fields[12])) * 10_000 });
  }
  return out;
}

/**
 * CPU spent between two samples, by name: what each process present in both spent, and all of what
 * one that began meanwhile spent. One that ended meanwhile is left out (a PostgreSQL backend closed
 * by a pool): its last figures are gone with it.
 */
function spentByName(before: Map<string, { us: number }>, after: Map<string, { name: string; us: number }>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [pid, { name, us }] of after) out.set(name, (out.get(name) ?? 0) + us - (before.get(pid)?.us ?? 0));
  return out;
}

const services = await startServices({ dir, database: 'paddock_bench', fresh: true, log });
const processes: NodeProcess[] = [];
try {
  await migrateDatabase(services.databaseUrl);
  const ctx = { databaseUrl: services.databaseUrl, redisUrl: services.redisUrl, dir, load: loadSettingsFromEnv(), profile: false, log, warn: log };
  const env = refuse ? { PADDOCK_RATE_ACCOUNT_PER_MIN: '2' } : {};
  const floor = await startFloor(ctx);
  const theirs = await startPaddock(ctx, 'info', { name: 'ab-other', env, script: resolve(other, 'api/main.ts') });
  const ours = await startPaddock(ctx, 'info', { name: 'ab-this', env });
  processes.push(floor, theirs, ours);
  const headers = { authorization: `Bearer ${await mintApiKey(ours.url)}` };
  // Signing up's key took one of the two tokens; this takes the other.
  if (refuse) await fetch(`${ours.url}${path}`, { headers });
  const subjects: { name: string; target: Target; rounds: LoadFigures[] }[] = [
    { name: 'floor', target: { url: `${floor.url}/`, pid: floor.pid }, rounds: [] },
    { name: `other (${other})`, target: { url: `${theirs.url}${path}`, headers, pid: theirs.pid }, rounds: [] },
    { name: 'this checkout', target: { url: `${ours.url}${path}`, headers, pid: ours.pid }, rounds: [] },
  ];
  const { rounds, seconds, warmupSeconds } = ctx.load;
  for (let round = 0; round < rounds; round++) {
    for (const subject of round % 2 ? [...subjects].reverse() : subjects) {
      const before = cpuByPid(['postgres', 'redis']);
      const client = process.cpuUsage();
      const figures = await measure(subject.target, ctx.load);
      const spent = spentByName(before, cpuByPid(['postgres', 'redis']));
      const clientUs = process.cpuUsage(client);
      // The others' CPU is read around warm-up and measurement alike: counted over both.
      const answered = figures.completed * (1 + warmupSeconds / seconds);
      const per = (name: string) => ((spent.get(name) ?? 0) / answered).toFixed(0);
      subject.rounds.push(figures);
      log(
        `${subject.name}: ${figures.requestsPerSecond.toFixed(0)} req/s, web ${figures.cpuUsPerRequest?.toFixed(0)} µs, ` +
          `PostgreSQL ${per('postgres')}, Redis ${per('redis')}, client ${((clientUs.user + clientUs.system) / answered).toFixed(0)} µs a request; ` +
          JSON.stringify(figures.statusCodes),
      );
    }
  }
  for (const { name, rounds: measured } of subjects) {
    const all = combine(measured);
    const web = measured.map((r) => Math.round(r.cpuUsPerRequest ?? NaN)).join(' / ');
    process.stdout.write(`${name}: ${Math.round(all.requestsPerSecond)} req/s, web CPU ${Math.round(all.cpuUsPerRequest ?? NaN)} µs a request (by round ${web})\n`);
  }
} finally {
  for (const p of processes.reverse()) await p.stop();
  killAll();
  await services.stop();
}
