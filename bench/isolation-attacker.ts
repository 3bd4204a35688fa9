// One phase of bench/isolation.ts's attacker, in a process of its own:
// `node bench/isolation-attacker.ts <attack> <milliseconds> <world as JSON>`.
import { ISOLATION_ATTACKS, runAttack } from './isolation-attacks.ts';

const [name, milliseconds, json] = process.argv.slice(2);
const attack = ISOLATION_ATTACKS.find((a) => a.name === name);
if (!attack || !json) {
  process.stderr.write(`usage: isolation-attacker.ts <attack> <milliseconds> <world>; attacks: ${ISOLATION_ATTACKS.map((a) => a.name).join('; ')}\n`);
  process.exit(2);
}
await runAttack(attack, performance.now() + Number(milliseconds), JSON.parse(json) as { url: string; key: string; sandboxId: string });
process.exit(0);
