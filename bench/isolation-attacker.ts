// One phase of bench/isolation.ts's attacker, in a process of its own:
// `node bench/isolation-attacker.ts <attack> <milliseconds> <world as JSON>`.
import { ISOLATION_ATTACKS, runAttack } from './isolation-attacks.ts';
import { readyThenGo } from './attacker-process.ts';

const [name, milliseconds, json] = process.argv.slice(2);
const attack = ISOLATION_ATTACKS.find((a) => a.name === name);
if (!attack || !json) {
  process.stderr.write(`usage: isolation-attacker.ts <attack> <milliseconds> <world>; attacks: ${ISOLATION_ATTACKS.map((a) => a.name).join('; ')}\n`);
  process.exit(2);
}
await readyThenGo();
const got = await runAttack(attack, performance.now() + Number(milliseconds), JSON.parse(json) as { url: string; key: string; sandboxId: string });
// What it got, and what its own client cost the shared cores (a remote attacker's would not).
const cpu = process.cpuUsage();
const statuses = Object.entries(got.statuses).map(([status, n]) => `${n}× ${status}`).join(', ');
process.stderr.write(`    attacker: ${statuses || 'no answer'}, ${got.megabytes} MiB of answers read, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s of CPU\n`);
process.exit(0);
