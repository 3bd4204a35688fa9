import { posix } from 'node:path';
import { ApiError } from '../../../shared/errors.ts';
import { MAX_BRACE_EXPANSIONS } from './limits.ts';

// Glob patterns, matched here rather than by the shell or find so that the semantics are exact,
// the same on every image, and safe from catastrophic backtracking:
//   *        any run of characters within one path segment
//   ?        one character (a code point) within a segment
//   [abc] [a-z] [!abc] [^abc]   one character of (or not of) the set; "]" first is literal
//   **       as a whole segment: zero or more segments
//   {a,b}    alternatives (nested braces too), expanded before matching
//   \x       the character x, literally
// As in a shell, a wildcard never matches a leading "." of a segment, and "**" never enters a
// hidden directory, unless the pattern's segment itself starts with ".". Matching is
// case-sensitive. A segment is matched in O(segment × pattern) and a path in O(segments ×
// pattern segments), whatever the pattern.

type CharToken =
  | { kind: 'literal'; char: string }
  | { kind: 'any' }
  | { kind: 'star' }
  | { kind: 'class'; negated: boolean; ranges: [number, number][] };

type Segment = { kind: 'globstar' } | { kind: 'segment'; tokens: CharToken[]; dotOk: boolean };

export interface CompiledGlob {
  /** Absolute directory the walk starts at: the base plus the pattern's literal leading segments. */
  start: string;
  /** Depth below start a match can have at most; 0 when unbounded (a `**`). */
  maxDepth: number;
  /** No pattern segment can match a hidden name: hidden subtrees need not be walked. */
  pruneHidden: boolean;
  /** A basename glob every match satisfies, simple enough for grep's --include ('' if none). */
  basenameFilter: string;
  /**
   * Whether a path relative to start matches. Each step of the matching spends one of the
   * budget's steps; past zero it throws GlobBudgetExhausted, so that no pattern and tree, however
   * crafted, keep the API's event loop for long.
   */
  matches(relative: string, budget?: GlobBudget): boolean;
}

export interface GlobBudget {
  steps: number;
}

export class GlobBudgetExhausted extends Error {
  override name = 'GlobBudgetExhausted';
}

function spend(budget: GlobBudget | undefined, steps: number): void {
  if (budget && (budget.steps -= steps) < 0) throw new GlobBudgetExhausted('the glob ran out of matching steps');
}

/** Compiles a pattern relative to `base` (an absolute, normalised directory); absolute patterns ignore it. */
export function compileGlob(pattern: string, base: string): CompiledGlob {
  // "src/" is "src": trailing slashes say nothing more here.
  const expansions = expandBraces(pattern.length > 1 ? pattern.replace(/\/+$/, '') : pattern);
  const split = expansions.map((p) => splitPattern(p, base));
  // The common literal directory of every alternative is where the walk starts.
  let start = split[0]!.literal;
  for (const s of split) start = commonDirectory(start, s.literal);
  const rests = split.map((s) => [...literalTail(s.literal, start), ...s.rest].filter((seg) => seg !== ''));
  const compiled = rests.map((segs) => collapseGlobstars(segs.map(compileSegment)));
  const depths = compiled.map((segs) => (segs.some((s) => s.kind === 'globstar') ? 0 : Math.max(segs.length, 1)));
  const maxDepth = depths.includes(0) ? 0 : Math.max(...depths);
  const pruneHidden = compiled.every((segs) => segs.every((s) => s.kind === 'globstar' || !s.dotOk));
  const only = rests.length === 1 ? rests[0]! : undefined;
  const last = only?.at(-1);
  // Only literal characters and "*": grep's fnmatch then accepts a superset of what matches here.
  const basenameFilter = last !== undefined && last !== '**' && /^[^?[\]{}\\]*$/.test(last) ? last : '';
  return {
    start,
    maxDepth,
    pruneHidden,
    basenameFilter,
    matches: (relative, budget) => {
      const parts = relative === '' ? [] : relative.split('/');
      return compiled.some((segs) => matchSegments(segs, parts, budget));
    },
  };
}

/** The pattern's literal leading directories (resolved against base) and the rest of its segments. */
function splitPattern(pattern: string, base: string): { literal: string; rest: string[] } {
  const segs = pattern.split('/');
  const absolute = pattern.startsWith('/');
  let literal = absolute ? '/' : base;
  let i = absolute ? 1 : 0;
  // The last segment stays a pattern even if literal: it is what is matched.
  for (; i < segs.length - 1; i++) {
    const seg = segs[i]!;
    if (/[*?[\\]/.test(seg)) break;
    literal = posix.resolve(literal, seg || '.');
  }
  return { literal, rest: segs.slice(i) };
}

function commonDirectory(a: string, b: string): string {
  const as = a.split('/');
  const bs = b.split('/');
  let n = 0;
  while (n < as.length && n < bs.length && as[n] === bs[n]) n++;
  return as.slice(0, n).join('/') || '/';
}

/** The segments of `dir` below `start` (an ancestor of it). */
function literalTail(dir: string, start: string): string[] {
  if (dir === start) return [];
  return (start === '/' ? dir.slice(1) : dir.slice(start.length + 1)).split('/').map(escapeLiteral);
}

function escapeLiteral(segment: string): string {
  return segment.replace(/[*?[\]{}\\]/g, '\\$&');
}

function collapseGlobstars(segs: Segment[]): Segment[] {
  return segs.filter((s, i) => !(s.kind === 'globstar' && segs[i - 1]?.kind === 'globstar'));
}

function compileSegment(seg: string): Segment {
  if (seg === '**') return { kind: 'globstar' };
  const chars = Array.from(seg);
  const tokens: CharToken[] = [];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === '\\' && i + 1 < chars.length) {
      tokens.push({ kind: 'literal', char: chars[++i]! });
    } else if (c === '*') {
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (c === '?') {
      tokens.push({ kind: 'any' });
    } else if (c === '[') {
      const parsed = parseClass(chars, i);
      if (parsed) {
        tokens.push(parsed.token);
        i = parsed.end;
      } else {
        tokens.push({ kind: 'literal', char: '[' });
      }
    } else {
      tokens.push({ kind: 'literal', char: c });
    }
  }
  const first = tokens[0];
  return { kind: 'segment', tokens, dotOk: first?.kind === 'literal' && first.char === '.' };
}

/** A bracket expression starting at chars[open] ("["), or undefined when it is not closed. */
function parseClass(chars: string[], open: number): { token: CharToken; end: number } | undefined {
  let i = open + 1;
  const negated = chars[i] === '!' || chars[i] === '^';
  if (negated) i++;
  const ranges: [number, number][] = [];
  let first = true;
  for (; i < chars.length; i++) {
    let c = chars[i]!;
    if (c === ']' && !first) return { token: { kind: 'class', negated, ranges }, end: i };
    first = false;
    if (c === '\\' && i + 1 < chars.length) c = chars[++i]!;
    let hi = c;
    if (chars[i + 1] === '-' && i + 2 < chars.length && chars[i + 2] !== ']') {
      hi = chars[i + 2]!;
      if (hi === '\\' && i + 3 < chars.length) {
        hi = chars[i + 3]!;
        i++;
      }
      i += 2;
    }
    ranges.push([c.codePointAt(0)!, hi.codePointAt(0)!]);
  }
  return undefined;
}

function matchesChar(token: CharToken, c: string): boolean {
  switch (token.kind) {
    case 'literal':
      return token.char === c;
    case 'any':
      return true;
    case 'class': {
      const cp = c.codePointAt(0)!;
      return token.ranges.some(([lo, hi]) => cp >= lo && cp <= hi) !== token.negated;
    }
    case 'star':
      return false;
  }
}

/** Wildcard matching with one backtrack point (the last star): linear-times-pattern, never exponential. */
function matchSegment(seg: Extract<Segment, { kind: 'segment' }>, name: string, budget: GlobBudget | undefined): boolean {
  if (name.startsWith('.') && !seg.dotOk) return false;
  const s = Array.from(name);
  // The loop below takes at most this many steps (each backtrack restarts past the last star).
  spend(budget, s.length * (seg.tokens.length + 1));
  const t = seg.tokens;
  let ti = 0;
  let si = 0;
  let starTi = -1;
  let starSi = 0;
  while (si < s.length) {
    const token = t[ti];
    if (token && token.kind !== 'star' && matchesChar(token, s[si]!)) {
      ti++;
      si++;
    } else if (token?.kind === 'star') {
      starTi = ti++;
      starSi = si;
    } else if (starTi >= 0) {
      ti = starTi + 1;
      si = ++starSi;
    } else {
      return false;
    }
  }
  while (t[ti]?.kind === 'star') ti++;
  return ti === t.length;
}

function matchSegments(pattern: Segment[], parts: string[], budget: GlobBudget | undefined): boolean {
  spend(budget, pattern.length + parts.length);
  // failed[i * (parts.length + 1) + j]: pattern[i..] cannot match parts[j..]; each pair is tried once.
  const failed = new Uint8Array((pattern.length + 1) * (parts.length + 1));
  const match = (i: number, j: number): boolean => {
    const key = i * (parts.length + 1) + j;
    if (failed[key]) return false;
    spend(budget, 1);
    let ok: boolean;
    const seg = pattern[i];
    if (!seg) ok = j === parts.length;
    else if (seg.kind === 'globstar') ok = match(i + 1, j) || (j < parts.length && !parts[j]!.startsWith('.') && match(i, j + 1));
    else ok = j < parts.length && matchSegment(seg, parts[j]!, budget) && match(i + 1, j + 1);
    if (!ok) failed[key] = 1;
    return ok;
  };
  return match(0, 0);
}

/** Expands {a,b} alternatives, nested or not; a brace without a top-level comma is literal. */
export function expandBraces(pattern: string): string[] {
  const out: string[] = [];
  const expand = (p: string): void => {
    const group = findBraceGroup(p);
    if (!group) {
      out.push(p);
    } else {
      for (const alt of group.alternatives) {
        expand(p.slice(0, group.open) + alt + p.slice(group.close + 1));
        if (out.length > MAX_BRACE_EXPANSIONS) {
          throw new ApiError('invalid_request', `query.pattern: braces expand to more than ${MAX_BRACE_EXPANSIONS} patterns.`);
        }
      }
    }
  };
  expand(pattern);
  return out;
}

function findBraceGroup(p: string): { open: number; close: number; alternatives: string[] } | undefined {
  for (let open = 0; open < p.length; open++) {
    if (p[open] === '\\') {
      open++;
      continue;
    }
    if (p[open] !== '{') continue;
    let depth = 0;
    const commas: number[] = [];
    for (let i = open; i < p.length; i++) {
      const c = p[i];
      if (c === '\\') i++;
      else if (c === '{') depth++;
      else if (c === ',' && depth === 1) commas.push(i);
      else if (c === '}' && --depth === 0) {
        if (commas.length === 0) break; // "{a}": literal; look for a later group
        const bounds = [open, ...commas, i];
        const alternatives = bounds.slice(1).map((end, k) => p.slice(bounds[k]! + 1, end));
        return { open, close: i, alternatives };
      }
    }
  }
  return undefined;
}
