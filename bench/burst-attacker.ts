// One burst of bench/burst.ts's attacker, in a process of its own (as bench/abuse-attacker.ts):
// `node bench/burst-attacker.ts <url> <key> <sandbox ids as JSON> <count> <timeout seconds>` sends
// `count` execs of a command that outlives its timeout, all at once, each on a connection of its
// own from another loopback address than the neighbour's (abuse-attacks.ts's `attack`), when the
// bench says go; prints the statuses it was answered, as JSON [[status, count], …].
import { attack } from './abuse-attacks.ts';
import { readyThenGo } from './attacker-process.ts';

const [url, key, boxesJson, count, timeoutSeconds] = process.argv.slice(2);
if (!url || !key || !boxesJson || !count || !timeoutSeconds) {
  process.stderr.write('usage: burst-attacker.ts <url> <key> <sandbox ids as JSON> <count> <timeout seconds>\n');
  process.exit(2);
}
const boxes = JSON.parse(boxesJson) as string[];
const body = JSON.stringify({ command: `sleep ${Number(timeoutSeconds) + 5}`, timeoutSeconds: Number(timeoutSeconds) });
const statuses = new Map<number, number>();
await readyThenGo();
await Promise.all(
  Array.from({ length: Number(count) }, async (_, i) => {
    const { status } = await attack({ url }, key, 'POST', `/v1/sandboxes/${boxes[i % boxes.length]}/exec`, body);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }),
);
process.stdout.write(JSON.stringify([...statuses]));
process.exit(0);
