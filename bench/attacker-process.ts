import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

// The attackers of bench/abuse.ts and bench/isolation.ts run in processes of their own, as a
// stranger's client on another machine would. Such a client's start (Node, TypeScript, its modules:
// some 100 ms of a core here) is not part of any attack, and when it ran at the phase's start it
// landed on the neighbour's first samples, the worst of a phase: the process is started and made
// ready before the phase, and the phase begins when it is told to go.

export interface ReadyAttacker {
  /** Starts the attack now; resolves with what the attacker printed on stdout when it ended. */
  go(): Promise<string>;
}

/** Starts `script` with `args` and resolves once it says it is ready (bench/attacker-process.ts's `readyThenGo`). */
export function startAttacker(script: string, args: string[]): Promise<ReadyAttacker> {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const output: string[] = [];
  const exited = new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    // 'close', not 'exit': the last line of its output may still be on its way at 'exit'.
    child.once('close', (code) => (code === 0 ? resolve(output.join('\n')) : reject(new Error(`the attacker ${script} ${args[0] ?? ''} exited with ${code}`))));
  });
  return new Promise((resolve, reject) => {
    let ready = false;
    lines.on('line', (line) => {
      if (ready) output.push(line);
      else if (line === 'ready') {
        ready = true;
        resolve({
          go: () => {
            child.stdin.end('go\n');
            return exited;
          },
        });
      }
    });
    exited.then(() => !ready && reject(new Error(`the attacker ${script} ended before it was ready`)), reject);
  });
}

/** In the attacker: says it is ready, and resolves when the bench says go. */
export async function readyThenGo(): Promise<void> {
  process.stdout.write('ready\n');
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line === 'go') {
      lines.close();
      return;
    }
  }
  throw new Error('the bench went away before the phase began');
}
