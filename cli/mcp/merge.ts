// Merging Paddock's server entry into a client's config file, as text: everything else in the file
// (other servers, other settings, comments, indentation, line endings) stays as it was.
import { applyEdits, modify, parse, printParseErrorCode, type FormattingOptions, type ParseError } from 'jsonc-parser';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import type { McpFormat } from '../../shared/mcp/targets.ts';

/** A config file paddock will not edit (it does not parse, or holds the entry in a form it cannot edit). */
export class ConfigMergeError extends Error {
  override name = 'ConfigMergeError';
}

export interface EntryChange {
  /** Where the object of servers sits in the document. */
  serversKey: readonly string[];
  name: string;
  /** Fields always set to these values. */
  fields: Record<string, unknown>;
  /** Fields set only when the entry lacks them. */
  defaults: Record<string, unknown>;
  /** Fields taken out (those of the other transport), unless they are among `fields`. */
  removed?: readonly string[];
}

export interface MergeResult {
  text: string;
  changed: boolean;
  /** The entry as it stands after the merge. */
  entry: Record<string, unknown>;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

/** Deep equality of parsed values, whatever their objects' prototypes (TOML tables have none). */
export function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => same(v, b[i]));
  }
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && same(a[k], b[k]));
}

/** The entry the file should hold: the existing one (if any) with the managed fields set. */
export function desiredEntry(existing: unknown, change: EntryChange): Json {
  if (!isObject(existing)) return { ...change.fields, ...structuredClone(change.defaults) };
  const out: Json = { ...existing };
  for (const k of change.removed ?? []) if (!(k in change.fields)) delete out[k];
  for (const [k, v] of Object.entries(change.fields)) out[k] = v;
  for (const [k, v] of Object.entries(change.defaults)) if (!(k in out)) out[k] = structuredClone(v);
  return out;
}

export function mergeEntry(format: McpFormat, text: string, change: EntryChange, file: string): MergeResult {
  return format === 'toml' ? mergeToml(text, change, file) : mergeJson(text, change, file);
}

// ---- JSON and JSON with comments ----

function lineOf(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}

function parseJsonc(text: string, file: string): unknown {
  const errors: ParseError[] = [];
  const value: unknown = parse(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: true });
  if (errors.length) {
    const e = errors[0]!;
    throw new ConfigMergeError(`${file} is not valid JSON (${printParseErrorCode(e.error)} at line ${lineOf(text, e.offset)}); fix it, then run this again.`);
  }
  return value;
}

/** The file's own indentation and line ending, for the text paddock inserts. */
function formattingOf(text: string): FormattingOptions {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const indent = /^([ \t]+)\S/m.exec(text)?.[1];
  if (indent?.startsWith('\t')) return { insertSpaces: false, tabSize: 1, eol };
  return { insertSpaces: true, tabSize: indent ? Math.min(indent.length, 8) : 2, eol };
}

function mergeJson(original: string, change: EntryChange, file: string): MergeResult {
  const bom = original.startsWith('\uFEFF') ? '\uFEFF' : '';
  let text = bom ? original.slice(1) : original;
  const root = parseJsonc(text, file);
  if (root !== undefined && !isObject(root)) throw new ConfigMergeError(`${file} does not hold a JSON object; paddock will not edit it.`);

  let container: unknown = root;
  for (const [i, key] of change.serversKey.entries()) {
    container = isObject(container) ? container[key] : undefined;
    if (container !== undefined && !isObject(container)) {
      const where = change.serversKey.slice(0, i + 1).join('.');
      throw new ConfigMergeError(`${where} in ${file} is not an object; paddock will not edit it.`);
    }
  }
  const existing = isObject(container) ? container[change.name] : undefined;
  const desired = desiredEntry(existing, change);
  if (isObject(existing) && same(existing, desired)) return { text: original, changed: false, entry: desired };

  if (root === undefined) {
    // Empty, or comments only: keep whatever is there above a new object.
    text = text.trim() === '' ? '{}' : `${text.replace(/\s*$/, '')}\n{}`;
  }
  const options = { formattingOptions: formattingOf(text) };
  const entryPath = [...change.serversKey, change.name];
  if (!isObject(existing)) {
    text = applyEdits(text, modify(text, entryPath, desired, options));
  } else {
    // Field by field, so the user's own fields and comments inside the entry stay.
    for (const [k, v] of Object.entries(desired)) {
      if (!same(existing[k], v)) text = applyEdits(text, modify(text, [...entryPath, k], v, options));
    }
    for (const k of Object.keys(existing)) {
      if (!(k in desired)) text = applyEdits(text, modify(text, [...entryPath, k], undefined, options));
    }
  }
  if (!text.endsWith('\n')) text += formattingOf(text).eol;

  // What was written must read back as intended.
  let check: unknown = parseJsonc(text, file);
  for (const key of entryPath) check = isObject(check) ? check[key] : undefined;
  if (!same(check, desired)) throw new ConfigMergeError(`Could not merge the ${change.name} entry into ${file}; edit it by hand.`);
  return { text: bom + text, changed: true, entry: desired };
}

// ---- TOML ----

/** The key path of a `[table]` or `[[array.of.tables]]` header line, or undefined. */
export function tomlHeaderPath(line: string): string[] | undefined {
  const m = /^\s*\[\[?(.*?)\]\]?\s*(#.*)?$/.exec(line);
  if (!m) return undefined;
  const inner = m[1]!;
  const keys: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(\.|$)/y;
  let at = 0;
  while (at < inner.length) {
    re.lastIndex = at;
    const k = re.exec(inner);
    if (!k) return undefined;
    keys.push(k[1] !== undefined ? (JSON.parse(`"${k[1]}"`) as string) : (k[2] ?? k[3]!));
    at = re.lastIndex;
    if (k[4] === '') break;
  }
  return keys;
}

const startsWith = (path: string[], prefix: readonly string[]) => prefix.every((k, i) => path[i] === k);

/** The table headers of a TOML text: line index and key path (lines inside multi-line strings skipped). */
function tomlHeaders(lines: string[]): { line: number; path: string[] }[] {
  const out: { line: number; path: string[] }[] = [];
  let inMultiline: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (inMultiline) {
      if ((line.split(inMultiline).length - 1) % 2 === 1) inMultiline = undefined;
      continue;
    }
    for (const quote of ['"""', "'''"]) {
      if ((line.split(quote).length - 1) % 2 === 1) inMultiline = quote;
    }
    const path = tomlHeaderPath(line);
    if (path) out.push({ line: i, path });
  }
  return out;
}

/**
 * The lines [start, end) of the tables under `prefix` that begin with the header at `start`: it
 * and the tables right after it whose path starts with `prefix`. Comment and blank lines just
 * before the next table are left to that table.
 */
function tableRun(lines: string[], headers: { line: number; path: string[] }[], start: number, prefix: readonly string[]): [number, number] {
  const next = headers.find((h) => h.line > start && !startsWith(h.path, prefix));
  let end = next ? next.line : lines.length;
  while (end > start + 1 && /^\s*(#.*)?$/.test(lines[end - 1]!)) end--;
  return [start, end];
}

function mergeToml(original: string, change: EntryChange, file: string): MergeResult {
  let doc: Json;
  try {
    doc = parseToml(original) as Json;
  } catch (err) {
    const line = (err as { line?: number }).line;
    throw new ConfigMergeError(`${file} is not valid TOML${line ? ` (line ${line})` : ''}; fix it, then run this again.`);
  }
  let container: unknown = doc;
  for (const key of change.serversKey) container = isObject(container) ? container[key] : undefined;
  if (container !== undefined && !isObject(container)) {
    throw new ConfigMergeError(`${change.serversKey.join('.')} in ${file} is not a table; paddock will not edit it.`);
  }
  const existing = isObject(container) ? container[change.name] : undefined;
  const desired = desiredEntry(existing, change);
  if (isObject(existing) && same(existing, desired)) return { text: original, changed: false, entry: desired };

  const eol = original.includes('\r\n') ? '\r\n' : '\n';
  const prefix = [...change.serversKey, change.name];
  let section = stringifyToml(nest(prefix.slice(0, -1), { [change.name]: desired }));
  section = section.replace(/\n/g, eol);
  const lines = original.split(/\r?\n/);
  const headers = tomlHeaders(lines);
  const own = headers.find((h) => h.path.length === prefix.length && startsWith(h.path, prefix));
  const trimmed = section.replace(/(\r?\n)+$/, '') + eol;
  let text: string;
  if (own) {
    // The entry's own tables are rewritten (comments inside them go); the rest of the file stays.
    const [start, end] = tableRun(lines, headers, own.line, prefix);
    text = [...lines.slice(0, start), ''].join(eol) + trimmed + lines.slice(end).join(eol);
  } else if (existing !== undefined) {
    throw new ConfigMergeError(
      `${file} defines ${prefix.join('.')} inline or with dotted keys; make it a [${prefix.join('.')}] table or remove it, then run this again.`,
    );
  } else {
    // After the last table of other servers, if there are some; else at the end.
    const siblings = headers.filter((h) => h.path.length > change.serversKey.length && startsWith(h.path, change.serversKey));
    const last = siblings.at(-1);
    if (last) {
      const [, end] = tableRun(lines, headers, last.line, last.path.slice(0, change.serversKey.length + 1));
      const before = lines.slice(0, end).join(eol).replace(/\s*$/, '');
      const rest = lines.slice(end).join(eol);
      text = `${before}${eol}${eol}${trimmed}${rest.trim() === '' ? '' : eol}${rest.replace(/^(\r?\n)+/, '')}`;
    } else {
      const body = original.replace(/\s*$/, '');
      text = body === '' ? trimmed : `${body}${eol}${eol}${trimmed}`;
    }
  }
  if (!text.endsWith(eol)) text += eol;

  let check: unknown;
  try {
    check = parseToml(text);
  } catch {
    check = undefined;
  }
  for (const key of prefix) check = isObject(check) ? check[key] : undefined;
  if (!same(check, desired)) {
    throw new ConfigMergeError(`Could not merge the ${change.name} entry into ${file} (how it defines ${change.serversKey.join('.')} is not editable in place); edit it by hand.`);
  }
  return { text, changed: true, entry: desired };
}

function nest(keys: readonly string[], leaf: Json): Json {
  let out = leaf;
  for (const key of [...keys].reverse()) out = { [key]: out };
  return out;
}
