import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ

/** CPU seconds the whole machine has spent busy (not idle, not waiting for I/O), from /proc/stat. */
export function machineBusySeconds(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq (steal is the hypervisor's; guest is inside user)
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = cpu;
  return (user + nice + system + irq + softirq) / TICKS_PER_SECOND;
}
