// One phase of bench/abuse.ts's attacker, in a process of its own:
// `node bench/abuse-attacker.ts <phase> <milliseconds> <world as JSON>`; prints the statuses the
// attacker was answered, as JSON [[status, count], …], when the phase is over. It starts when
// bench/abuse.ts says go (bench/attacker-process.ts).
import { PHASES, type AttackerWorld } from './abuse-attacks.ts';
import { readyThenGo } from './attacker-process.ts';

const [name, milliseconds, json] = process.argv.slice(2);
const phase = PHASES.find((p) => p.name === name);
if (!phase || !json) {
  process.stderr.write(`usage: abuse-attacker.ts <phase> <milliseconds> <world>; phases: ${PHASES.map((p) => p.name).join('; ')}\n`);
  process.exit(2);
}
const world: AttackerWorld = { ...(JSON.parse(json) as Omit<AttackerWorld, 'statuses'>), statuses: new Map() };
await readyThenGo();
await phase.run(world, performance.now() + Number(milliseconds));
process.stdout.write(JSON.stringify([...world.statuses]));
// Sockets an attack left half-open must not keep this process alive.
process.exit(0);
