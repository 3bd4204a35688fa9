import { constants } from 'node:os';
import { isId } from '../../../shared/ids.ts';
import { SecretMasker, type MaskSet } from '../../../shared/exec/masker.ts';

export interface ProcessRecord {
  id: string;
  command: string;
  startedAt: Date;
  status: 'running' | 'exited';
  /** null while it runs, when a signal ended it, or when its end was never recorded. */
  exitCode: number | null;
  signal: string | null;
  endedAt: Date | null;
}

/** How long the command shown in lists may be, in characters. */
export const COMMAND_SHOWN_MAX = 1024;

/** The command as lists show it: a string as given, an argv quoted as a shell would read it. */
export function commandShown(command: string | string[]): string {
  const text = typeof command === 'string' ? command : command.map(shellQuote).join(' ');
  return text.length > COMMAND_SHOWN_MAX ? `${text.slice(0, COMMAND_SHOWN_MAX - 1)}…` : text;
}

function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

/**
 * A status as the shell's `wait` reports it: a death by signal reads as 128 + its number, which
 * is how the exec routes read a Kubernetes exit code too (and with the same price: an explicit
 * `exit 143` reads as SIGTERM).
 */
function ending(status: string): { exitCode: number | null; signal: string | null } {
  if (status === 'lost') return { exitCode: null, signal: null };
  const code = Number(status);
  const signal = code > 128 && code < 160 ? SIGNAL_NAMES.get(code - 128) : undefined;
  return signal ? { exitCode: null, signal } : { exitCode: code, signal: null };
}

const LINE = /^(proc_[0-9a-z]{24}) ([0-9]{1,20}) (running|lost|[0-9]{1,3}) (-|[0-9]{1,20}) ([A-Za-z0-9+/=]{1,11000})$/;

/**
 * The records the LIST script printed. Its directory is writable by the tenant's own commands, so
 * anything that is not exactly what the scripts write is skipped, never trusted or echoed.
 */
export function parseRecords(text: string, masks: MaskSet | undefined): ProcessRecord[] {
  const records: ProcessRecord[] = [];
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m || !isId('proc', m[1]!)) continue;
    const startedAt = fromNanos(m[2]!);
    const endedAt = m[4] === '-' ? null : (fromNanos(m[4]!) ?? null);
    if (!startedAt || (m[4] !== '-' && !endedAt)) continue;
    const running = m[3] === 'running';
    records.push({
      id: m[1]!,
      command: masked(Buffer.from(m[5]!, 'base64').toString('utf8').slice(0, COMMAND_SHOWN_MAX), masks),
      startedAt,
      status: running ? 'running' : 'exited',
      ...(running ? { exitCode: null, signal: null } : ending(m[3]!)),
      endedAt,
    });
  }
  return records.sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || a.id.localeCompare(b.id));
}

function fromNanos(nanos: string): Date | undefined {
  const ms = Number(BigInt(nanos) / 1_000_000n);
  const date = new Date(ms);
  return Number.isFinite(date.getTime()) ? date : undefined;
}

/** Secrets masked in a command as in the output: its text may hold one (`curl -H "…$TOKEN…"` expanded by a client). */
export function masked(text: string, masks: MaskSet | undefined): string {
  const masker = new SecretMasker(masks);
  if (!masker.active) return text;
  return Buffer.concat([masker.push(Buffer.from(text, 'utf8')), masker.flush()]).toString('utf8');
}
