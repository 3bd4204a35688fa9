import { spawnSync } from 'node:child_process';
import { cliEnv, repoRoot, cliCommand } from './cli-helpers.ts';

let sessions = 0;

/**
 * `paddock` in a real terminal: a tmux server of its own, one window the size of a small
 * screen. What the window shows (capture-pane) is what a person would see, so an echoed
 * password shows up there; typed text goes in through a tmux buffer (never on a command line).
 */
export class Terminal {
  readonly socket = `paddock-test-${process.pid}-${++sessions}`;
  private readonly env: NodeJS.ProcessEnv;

  /** `after`: shell text run once paddock has ended, before the exit line (to look at the terminal then). */
  constructor(home: string, args: string[], env: Record<string, string | undefined> = {}, after = '') {
    this.env = cliEnv(home, { TERM: 'xterm-256color', ...env });
    const quoted = [...cliCommand(), ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    // The shell stays after paddock ends, so its last screen and its exit code can be read.
    const command = `${quoted}; s=$?; ${after}${after ? '; ' : ''}echo "[exit $s]"; sleep 600`;
    this.tmux(['new-session', '-d', '-s', 'cli', '-x', '120', '-y', '40', '-c', repoRoot, command]);
  }

  private tmux(args: string[], input?: string): string {
    const r = spawnSync('tmux', ['-L', this.socket, '-f', '/dev/null', ...args], { env: this.env, input, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tmux ${args[0]} failed: ${r.stderr}`);
    return r.stdout;
  }

  /** The screen now, as text (`escapes`: with its colour and style sequences). */
  screen(escapes = false): string {
    return this.tmux(['capture-pane', '-p', '-t', 'cli', ...(escapes ? ['-e'] : [])]);
  }

  /** Types text as a person would (no Enter). */
  type(text: string): void {
    this.tmux(['load-buffer', '-b', 'typed', '-'], text);
    this.tmux(['paste-buffer', '-d', '-b', 'typed', '-t', 'cli']);
  }

  /** Presses keys by tmux name: Enter, Escape, Down, C-c. */
  press(...keys: string[]): void {
    this.tmux(['send-keys', '-t', 'cli', ...keys]);
  }

  /** Waits until the screen passes `check`; answers it. */
  async waitFor(check: (screen: string) => boolean, what: string, timeoutMs = 30_000, escapes = false): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = this.screen(escapes);
      if (check(s)) return s;
      if (Date.now() > deadline) throw new Error(`the terminal never showed ${what}; it shows:\n${this.screen()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Waits for paddock to end; answers its exit code. */
  async exitCode(timeoutMs = 30_000): Promise<number> {
    const s = await this.waitFor((x) => /\[exit \d+\]/.test(x), 'the exit', timeoutMs);
    return Number(/\[exit (\d+)\]/.exec(s)![1]);
  }

  /** Resizes the window, as a person dragging its corner: the program gets SIGWINCH. */
  resize(cols: number, rows: number): void {
    this.tmux(['resize-window', '-t', 'cli', '-x', String(cols), '-y', String(rows)]);
  }

  close(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server'], { env: this.env });
  }
}
