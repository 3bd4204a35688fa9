// The burst floor's command runner (bench/burst-floor.ts): a small process of its own, as any
// API that runs commands has (Paddock's agent, E2B's envd), so the floor's web never forks its own
// large process. Newline-delimited JSON on stdin, `{id, command, timeoutSeconds}`, each answered
// on stdout as `{id, exitCode, stdout, stderr, timedOut}` once its command has ended.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const OUTPUT_LIMIT = 16 << 10;
/** The process groups of the commands under way, ended with the runner when the floor stops. */
const running = new Set<number>();

interface Order {
  id: number;
  command: string | string[];
  timeoutSeconds: number;
}

function run({ id, command, timeoutSeconds }: Order): void {
  const [file, args] = typeof command === 'string' ? ['/bin/sh', ['-c', command]] : [command[0]!, command.slice(1)];
  const child = spawn(file, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid) running.add(child.pid);
  const out = { stdout: '', stderr: '' };
  for (const name of ['stdout', 'stderr'] as const) {
    child[name].setEncoding('utf8').on('data', (text: string) => {
      if (out[name].length < OUTPUT_LIMIT) out[name] += text.slice(0, OUTPUT_LIMIT - out[name].length);
    });
  }
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }, timeoutSeconds * 1000);
  let settled = false;
  const settle = (exitCode: number | null) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    if (child.pid) running.delete(child.pid);
    process.stdout.write(`${JSON.stringify({ id, exitCode, ...out, timedOut })}\n`);
  };
  child.once('error', () => settle(null));
  child.once('close', (code) => settle(code));
}

process.on('SIGTERM', () => {
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  process.exit(0);
});

for await (const line of createInterface({ input: process.stdin })) run(JSON.parse(line) as Order);
