import type { Command } from 'commander';

/**
 * How the API's field names read in one command's terms: `oldText` is `--old` to someone who
 * typed `paddock files edit --old`. A key is a field name (`oldText`: bare or after `body.` or
 * `query.`) or a located one (`query.path`: only so), a value the flag or argument that sent it.
 */
export type FieldFlags = Record<string, string>;

const registered = new WeakMap<Command, FieldFlags>();

/** Declares, on a command, which of its flags and arguments each API field came from. */
export function fieldFlags<C extends Command>(cmd: C, fields: FieldFlags): C {
  registered.set(cmd, { ...registered.get(cmd), ...fields });
  return cmd;
}

/** What was declared for this command, and how to name it (`paddock files edit`). */
export function fieldContext(cmd: Command | undefined): ErrorContext | undefined {
  if (!cmd) return undefined;
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return { command: names.join(' '), fields: registered.get(cmd) ?? {} };
}

export interface ErrorContext {
  /** The command that ran, e.g. `paddock files edit`. */
  command: string;
  fields: FieldFlags;
}

const LOCATIONS = '(?:body|query|path|header)';

/**
 * The text with the API's field paths put in the command's flags. What follows a field's path
 * names a part of it: an entry of a list by its place (`body.events.0` is `--event #1`), a
 * name of a map as itself (`body.env.1BAD` is `--env 1BAD`).
 */
export function inFlagTerms(text: string, fields: FieldFlags): string {
  let out = text;
  // Longer names first, so `query.startLine` is not half-replaced by a `startLine` rule.
  for (const [field, flag] of Object.entries(fields).sort(([a], [b]) => b.length - a.length)) {
    const name = escape(field);
    const located = new RegExp(`^${LOCATIONS}\\.`).test(field);
    const pattern = located ? `(?<![\\w.-])${name}(?![\\w])` : `(?<![\\w.-])(?:${LOCATIONS}\\.)?${name}(?![\\w])`;
    out = out.replace(new RegExp(`${pattern}(?:\\.([^\\s:]+))?`, 'g'), (_match, part: string | undefined) => {
      if (part === undefined) return flag;
      return /^\d+$/.test(part) ? `${flag} #${Number(part) + 1}` : `${flag} ${part}`;
    });
  }
  return out;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
