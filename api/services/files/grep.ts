import { posix } from 'node:path';
import { ApiError } from '../../../shared/errors.ts';
import type { AppDeps } from '../../context.ts';
import { compileGlob, GlobBudgetExhausted, type CompiledGlob } from './glob-match.ts';
import { GLOB_MAX_MATCH_STEPS, GREP_MAX_LINE_CHARS, GREP_MAX_MATCHES, GREP_MAX_OUTPUT_BYTES, SEARCH_TIMEOUT_MS } from './limits.ts';
import { relativeTo } from './paths.ts';
import { runScript, throwIfFailed } from './run.ts';
import { GREP_SCRIPT } from './scripts.ts';

// The pattern is a POSIX extended regular expression as GNU grep -E reads it (with its \w \s \b
// \< \> and back-references; no lookaround, no lazy quantifiers), run by grep in the sandbox: the
// sandbox pays the CPU, and the timeout bounds a pathological pattern. Files are searched
// recursively without following symlinks below the path; binary files (a NUL byte, or bytes that
// are not valid in the sandbox's UTF-8 locale) are skipped.

export interface GrepRequest {
  pattern: string;
  /** A file or directory (normalised, absolute). */
  path: string;
  /** Only files whose path relative to `path` matches this glob (see glob-match.ts). */
  glob?: string;
  ignoreCase: boolean;
}

export interface GrepMatch {
  path: string;
  /** 1-based. */
  line: number;
  /** The line without its newline, cut at GREP_MAX_LINE_CHARS characters. */
  text: string;
}

export interface GrepResult {
  pattern: string;
  matches: GrepMatch[];
  /** More matches than GREP_MAX_MATCHES, or the search stopped early (output bound or time). */
  truncated: boolean;
}

/** Parses grep --null output, "<path>\0<line>:<text>\n", as it arrives. */
export class GrepOutputParser {
  private pending: Buffer = Buffer.alloc(0);
  push(chunk: Buffer, onMatch: (path: string, line: number, text: Buffer) => boolean): boolean {
    const buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let pos = 0;
    for (;;) {
      const nameEnd = buf.indexOf(0, pos);
      if (nameEnd === -1) break;
      const lineEnd = buf.indexOf(10, nameEnd + 1);
      if (lineEnd === -1) break;
      const rest = buf.subarray(nameEnd + 1, lineEnd);
      const colon = rest.indexOf(58);
      const path = buf.subarray(pos, nameEnd).toString('utf8');
      pos = lineEnd + 1;
      if (colon > 0 && !onMatch(path, Number(rest.subarray(0, colon).toString('latin1')), rest.subarray(colon + 1))) {
        this.pending = Buffer.alloc(0);
        return false;
      }
    }
    this.pending = Buffer.from(buf.subarray(pos));
    return true;
  }
}

// Perl-style syntax that POSIX ERE lacks, which GNU grep would otherwise take as something else
// (`\d` as a plain "d", with only a warning): refused with a hint rather than silently mismatched.
const PERL_ONLY: Record<string, string> = {
  d: 'use [0-9] or [[:digit:]]',
  D: 'use [^0-9]',
  h: 'use [[:blank:]]',
  '(?': 'lookaround, non-capturing and inline-flag groups are not ERE; use ignoreCase=true for (?i)',
};

export function validateRegex(pattern: string): void {
  if (/[\n\r]/.test(pattern)) {
    throw new ApiError('invalid_request', 'query.pattern: must be one line (a newline would make it several patterns).');
  }
  let inBracket = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (inBracket) {
      // "]" right after "[" or "[^" is a member; "[:alpha:]"-style classes contain no bare "]".
      if (c === '[' && pattern[i + 1] === ':') i = Math.max(i, pattern.indexOf(':]', i + 2) + 1);
      else if (c === ']') inBracket = false;
      continue;
    }
    if (c === '[') {
      inBracket = true;
      if (pattern[i + 1] === '^') i++;
      if (pattern[i + 1] === ']') i++;
    } else if (c === '\\') {
      const next = pattern[++i];
      if (next !== undefined && Object.hasOwn(PERL_ONLY, next)) refusePerl(`\\${next}`, PERL_ONLY[next]!);
    } else if (c === '(' && pattern[i + 1] === '?') {
      refusePerl('(?', PERL_ONLY['(?']!);
    }
  }
}

function refusePerl(syntax: string, hint: string): never {
  const detail = `query.pattern: ${syntax} is Perl syntax; patterns are POSIX extended regular expressions: ${hint}.`;
  throw new ApiError('invalid_request', detail);
}

function cutLine(text: Buffer): string {
  const s = text.toString('utf8');
  if (s.length <= GREP_MAX_LINE_CHARS) return s;
  return Array.from(s).slice(0, GREP_MAX_LINE_CHARS).join('');
}

export async function grepFiles(deps: AppDeps, sandboxId: string, request: GrepRequest): Promise<GrepResult> {
  validateRegex(request.pattern);
  const glob: CompiledGlob | undefined = request.glob ? compileGlob(request.glob, request.path) : undefined;
  const start = glob?.start ?? request.path;
  const matches: GrepMatch[] = [];
  let capped = false;
  const parser = new GrepOutputParser();
  const budget = { steps: GLOB_MAX_MATCH_STEPS };
  const result = await runScript(
    deps,
    sandboxId,
    GREP_SCRIPT,
    [
      request.pattern,
      request.path,
      start,
      glob?.basenameFilter ?? '',
      request.ignoreCase ? '1' : '0',
      glob?.pruneHidden && !start.split('/').some((s) => s.startsWith('.')) ? '1' : '0',
    ],
    {
      timeoutMs: SEARCH_TIMEOUT_MS,
      maxStdoutBytes: GREP_MAX_OUTPUT_BYTES,
      onStdout: (chunk) =>
        parser.push(chunk, (rawPath, line, text) => {
          const path = posix.normalize(rawPath);
          try {
            if (glob && path !== start && !glob.matches(relativeTo(start, path), budget)) return true;
          } catch (err) {
            if (!(err instanceof GlobBudgetExhausted)) throw err;
            capped = true;
            return false;
          }
          matches.push({ path, line, text: cutLine(text) });
          if (matches.length > GREP_MAX_MATCHES) {
            capped = true;
            return false;
          }
          return true;
        }),
    },
  );
  throwIfFailed(result, request.path);
  if (result.exitCode === 2 && matches.length === 0 && !result.stopped && !result.timedOut && result.stderr.trim()) {
    const message = result.stderr.trim().split('\n')[0]!.replace(/^grep: /, '');
    throw new ApiError('invalid_request', `query.pattern: not a valid extended regular expression: ${message}`);
  }
  const truncated = capped || result.stopped || result.timedOut;
  if (matches.length > GREP_MAX_MATCHES) matches.length = GREP_MAX_MATCHES;
  matches.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line));
  return { pattern: request.pattern, matches, truncated };
}
