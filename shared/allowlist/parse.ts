/**
 * A small, fail-closed parser for the POSIX shell language (plus the bash spellings that matter
 * for safety), written for the command allowlist checker. It is not a general-purpose parser: it
 * builds just enough of a tree to find every command a script would start, and it throws a
 * {@link Refusal} for anything it does not fully understand, including every construct that runs
 * a command the checker cannot see (command substitution, backquotes, process substitution).
 *
 * Why its own parser: the checker runs on every exec and must be synchronous and cheap. The two
 * npm builds of mvdan/sh were measured: `sh-syntax` instantiates a fresh Go WASM module on every
 * call (about 16 ms per parse, asynchronous, and its JSON tree carries no node types), `mvdan-sh`
 * (GopherJS, unmaintained) is synchronous but costs about 200 µs per parse and 85 ms to load.
 * This parser checks a typical pipeline in a few microseconds.
 *
 * Where POSIX sh (dash), bash and busybox ash read the same text differently, the parser either
 * picks the reading that finds more commands or refuses the text (see the notes at each spot).
 */

/**
 * Thrown for anything the checker will not allow; `program` names the program or construct.
 * Not an Error subclass on purpose: capturing a stack trace would cost more than the whole check.
 * checkCommand catches it; it never leaves this module.
 */
export class Refusal {
  readonly program: string;
  readonly reason: string;
  constructor(program: string, reason: string) {
    this.program = program;
    this.reason = reason;
  }
}

/** One word of the script, with what the checker needs to know about it. */
export interface Word {
  /** The source text of the word, with line continuations removed. */
  raw: string;
  /**
   * The word's value after quote removal when it is a plain literal that always expands to
   * exactly itself; null when it holds a parameter or arithmetic expansion, a glob character, a
   * leading tilde, a brace expansion or `$'…'` / `$"…"` quoting (whose meaning differs by shell).
   */
  value: string | null;
  /** True when the word always yields exactly one field (nothing unquoted expands or globs). */
  singleField: boolean;
  /** Names assigned by `${name=…}` / `${name:=…}` inside the word. */
  assigns: string[];
}

export interface Assignment {
  name: string;
  word: Word;
}

export interface SimpleCommand {
  type: 'simple';
  assignments: Assignment[];
  words: Word[];
  /** Redirection targets (expanded like arguments, never run). */
  redirects: Word[];
}
export interface FunctionDefinition {
  type: 'function';
  name: Word;
  body: Command;
}
/** Subshells, brace groups, if/while/until/case: only the commands inside matter. */
export interface CompoundCommand {
  type: 'compound';
  body: Command[];
  /** Words that are expanded but not run: case subjects and patterns, `for` word lists. */
  words: Word[];
  /** The variable a `for` loop assigns. */
  loopVariable?: Word;
}
export type Command = SimpleCommand | FunctionDefinition | CompoundCommand;

export const MAX_NESTING = 16;

type Token =
  | { t: 'word'; w: Word }
  | { t: 'op'; v: string }
  | { t: 'io'; v: string }
  | { t: 'nl' }
  | { t: 'eof' };

const EOF_TOKEN: Token = { t: 'eof' };
const NL_TOKEN: Token = { t: 'nl' };

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;
const SPECIAL_PARAMS = '@*#?-$!0123456789';
const WORD_END = ' \t\n;&|<>()';

/** Characters with no meaning inside a word (read in bulk by the lexer's fast path). */
const PLAIN = new Uint8Array(128);
for (let c = 33; c < 127; c++) PLAIN[c] = 1;
for (const c of ';&|<>()\\\'"`$*?[~{}') PLAIN[c.charCodeAt(0)] = 0;

function snippet(text: string): string {
  const line = stripContinuations(text).split('\n', 1)[0] ?? '';
  return line.length > 40 ? `${line.slice(0, 40)}…` : line;
}

interface HeredocPending {
  delimiter: string;
  quoted: boolean;
  stripTabs: boolean;
}

class Lexer {
  readonly src: string;
  pos = 0;
  private heredocs: HeredocPending[] = [];
  private braceDepth = 0;
  private peeked: Token | null = null;

  constructor(src: string) {
    this.src = src;
  }

  // ---- character access (line continuations are invisible outside single quotes) ----

  private skipCont(): void {
    const s = this.src;
    while (s.charCodeAt(this.pos) === 92 /* \ */ && s.charCodeAt(this.pos + 1) === 10 /* \n */) this.pos += 2;
  }

  private cur(): string {
    this.skipCont();
    return this.src[this.pos] ?? '';
  }

  // ---- tokens ----

  peek(): Token {
    if (this.peeked === null) this.peeked = this.lex();
    return this.peeked;
  }

  next(): Token {
    const tok = this.peek();
    this.peeked = null;
    return tok;
  }

  addHeredoc(delimiter: Word, stripTabs: boolean): void {
    // A delimiter is taken literally after quote removal; any quoting makes the body literal.
    if (/[$`]/.test(delimiter.raw)) {
      throw new Refusal(`<<${delimiter.raw}`, 'a here-document delimiter with `$` or backquotes is not supported');
    }
    const text = removeQuotes(delimiter.raw);
    if (text === null || text === '') {
      throw new Refusal(`<<${delimiter.raw}`, 'this here-document delimiter is not supported');
    }
    this.heredocs.push({ delimiter: text, quoted: /['"\\]/.test(delimiter.raw), stripTabs });
  }

  private lex(): Token {
    const s = this.src;
    for (;;) {
      const c = this.cur();
      if (c === ' ' || c === '\t') {
        this.pos++;
        continue;
      }
      if (c === '#') {
        const end = s.indexOf('\n', this.pos);
        const stop = end === -1 ? s.length : end;
        // bash and dash end a comment at the newline even after a backslash; other shells may
        // not, so such a comment is refused rather than guessed.
        if (s[stop - 1] === '\\') throw new Refusal('#', 'a comment ending with a backslash is ambiguous');
        this.pos = stop;
        continue;
      }
      break;
    }
    const c = this.cur();
    if (c === '') {
      if (this.heredocs.length > 0) {
        throw new Refusal(`<<${this.heredocs[0]!.delimiter}`, 'a here-document is not terminated');
      }
      return EOF_TOKEN;
    }
    if (c === '\n') {
      this.pos++;
      this.readHeredocBodies();
      return NL_TOKEN;
    }
    if (c === ';' || c === '&' || c === '|' || c === '<' || c === '>' || c === '(' || c === ')') {
      return { t: 'op', v: this.readOperator() };
    }
    return this.readWord();
  }

  private readOperator(): string {
    const c = this.cur();
    this.pos++;
    const n = this.cur();
    switch (c) {
      case ';':
        if (n === ';') {
          this.pos++;
          if (this.cur() === '&') throw new Refusal(';;&', 'the bash case terminator `;;&` is not supported');
          return ';;';
        }
        if (n === '&') throw new Refusal(';&', 'the bash case terminator `;&` is not supported');
        return ';';
      case '&':
        if (n === '&') {
          this.pos++;
          return '&&';
        }
        if (n === '>') {
          // bash: redirect stdout and stderr; dash: `&` then `>` (the next word becomes a program).
          throw new Refusal('&>', 'the bash redirection `&>` is read differently by other shells; use `>file 2>&1`');
        }
        return '&';
      case '|':
        if (n === '|') {
          this.pos++;
          return '||';
        }
        if (n === '&') {
          // bash pipes stderr too; dash rejects it. Both sides are commands and are checked.
          this.pos++;
          return '|';
        }
        return '|';
      case '(':
        if (n === '(') {
          // bash reads `((…))` as arithmetic, which evaluates variables' values as expressions
          // (and array subscripts inside them run commands); dash reads nested subshells.
          throw new Refusal('((', 'the arithmetic command `((…))` is not allowed; put a space between nested subshells');
        }
        return '(';
      case ')':
        return ')';
      case '<':
        if (n === '(') throw new Refusal(this.substitutionText(this.pos - 1), 'process substitution `<(…)` runs a command that cannot be checked');
        if (n === '<') {
          this.pos++;
          const m = this.cur();
          if (m === '-') {
            this.pos++;
            return '<<-';
          }
          if (m === '<') {
            this.pos++;
            return '<<<';
          }
          return '<<';
        }
        if (n === '&' || n === '>') {
          this.pos++;
          return `<${n}`;
        }
        return '<';
      default: // '>'
        if (n === '(') throw new Refusal(this.substitutionText(this.pos - 1), 'process substitution `>(…)` runs a command that cannot be checked');
        if (n === '>' || n === '&' || n === '|') {
          this.pos++;
          return `>${n}`;
        }
        return '>';
    }
  }

  /** The text of a substitution starting at `start`, for messages. */
  private substitutionText(start: number): string {
    const s = this.src;
    let depth = 0;
    let i = start;
    const open = s[start] === '`' ? '`' : '(';
    if (open === '`') {
      const end = s.indexOf('`', start + 1);
      return snippet(end === -1 ? s.slice(start) : s.slice(start, end + 1));
    }
    for (; i < s.length; i++) {
      if (s[i] === '(') depth++;
      else if (s[i] === ')' && --depth === 0) break;
    }
    return snippet(s.slice(start, i + 1));
  }

  private readWord(): Token {
    const s = this.src;
    let raw = '';
    let value = '';
    let literal = true;
    let singleField = true;
    let sawBrace = false;
    let glob = false;
    const assigns: string[] = [];
    let first = true;
    for (;;) {
      const c = this.cur();
      if (c === '' || WORD_END.includes(c)) break;
      const from = this.pos;
      if (!sawBrace) {
        // fast path: a run of ordinary characters
        let j = from;
        for (let code = s.charCodeAt(j); code < 128 && PLAIN[code] === 1; code = s.charCodeAt(++j));
        if (j > from) {
          const chunk = s.slice(from, j);
          value += chunk;
          raw += chunk;
          this.pos = j;
          first = false;
          continue;
        }
      }
      let verbatim = false;
      if (c === '\\') {
        const e = s[this.pos + 1];
        if (e === undefined) throw new Refusal('\\', 'a backslash at the end of the command is ambiguous');
        value += e;
        this.pos += 2;
      } else if (c === "'") {
        const end = s.indexOf("'", this.pos + 1);
        if (end === -1) throw new Refusal("'", 'a single quote is not closed');
        value += s.slice(this.pos + 1, end);
        this.pos = end + 1;
        verbatim = true;
      } else if (c === '"') {
        this.pos++;
        const r = this.readDoubleQuoted(assigns);
        value += r.value;
        if (!r.literal) literal = false;
      } else if (c === '`') {
        throw new Refusal(this.substitutionText(this.pos), 'command substitution with backquotes runs a command that cannot be checked');
      } else if (c === '$') {
        const r = this.readDollar('unquoted', assigns);
        if (r.literal !== null) value += r.literal;
        else {
          literal = false;
          if (!r.quoted) singleField = false;
        }
      } else {
        if (c === '*' || c === '?' || c === '[') {
          glob = true;
        } else if (c === '~' && first) {
          literal = false;
        } else if (c === '{') {
          sawBrace = true;
        } else if (sawBrace && (c === ',' || (c === '.' && this.nextIsDot()))) {
          // bash brace expansion ({a,b}, {1..3}): several words from one
          literal = false;
          singleField = false;
        }
        value += c;
        this.pos++;
      }
      raw += verbatim ? s.slice(from, this.pos) : stripContinuations(s.slice(from, this.pos));
      first = false;
    }
    if (glob && raw !== '[') {
      literal = false;
      singleField = false;
    }
    const endChar = this.cur();
    if ((endChar === '<' || endChar === '>') && /^[0-9]+$/.test(raw)) {
      return { t: 'io', v: raw };
    }
    return { t: 'word', w: { raw, value: literal ? value : null, singleField, assigns } };
  }

  /** Whether the character after the current `.` (past line continuations) is another `.`. */
  private nextIsDot(): boolean {
    const here = this.pos;
    this.pos++;
    const dot = this.cur() === '.';
    this.pos = here;
    return dot;
  }

  /** Reads the inside of "…" (the opening quote is consumed). */
  private readDoubleQuoted(assigns: string[]): { value: string; literal: boolean } {
    const s = this.src;
    let value = '';
    let literal = true;
    for (;;) {
      const c = this.cur();
      if (c === '') throw new Refusal('"', 'a double quote is not closed');
      if (c === '"') {
        this.pos++;
        return { value, literal };
      }
      if (c === '\\') {
        const e = s[this.pos + 1] ?? '';
        if (e === '$' || e === '`' || e === '"' || e === '\\') {
          value += e;
          this.pos += 2;
        } else {
          value += '\\';
          this.pos++;
        }
      } else if (c === '`') {
        throw new Refusal(this.substitutionText(this.pos), 'command substitution with backquotes runs a command that cannot be checked');
      } else if (c === '$') {
        const r = this.readDollar('dquote', assigns);
        if (r.literal !== null) value += r.literal;
        else literal = false;
      } else {
        value += c;
        this.pos++;
      }
    }
  }

  /**
   * Reads an expansion starting at `$`. Returns the literal text when `$` is just a character,
   * else null; `quoted` tells whether the expansion is protected from field splitting.
   */
  readDollar(mode: 'unquoted' | 'dquote' | 'heredoc' | 'param', assigns: string[]): { literal: string | null; quoted: boolean } {
    const s = this.src;
    const start = this.pos;
    this.pos++; // $
    const c = this.cur();
    const quoted = mode !== 'unquoted';
    if (c === '(') {
      this.pos++;
      if (this.cur() === '(') {
        this.pos++;
        this.readArithmetic(start);
        return { literal: null, quoted };
      }
      throw new Refusal(this.substitutionText(start), 'command substitution `$(…)` runs a command that cannot be checked');
    }
    if (c === '{') {
      this.pos++;
      if (++this.braceDepth > MAX_NESTING) {
        throw new Refusal('${', `parameter expansions nest more than ${MAX_NESTING} levels deep`);
      }
      this.readBraceParameter(start, assigns);
      this.braceDepth--;
      return { literal: null, quoted };
    }
    if (c === '[') {
      throw new Refusal('$[', 'the bash arithmetic `$[…]` is not allowed');
    }
    if (c === "'") {
      if (mode === 'unquoted') {
        // bash and ash: ANSI-C quoting; dash: `$` followed by a single-quoted string. Without
        // backslashes both split the text the same way; with them they do not.
        const end = s.indexOf("'", this.pos + 1);
        if (end === -1) throw new Refusal("$'", 'a quote is not closed');
        if (s.slice(this.pos + 1, end).includes('\\')) {
          throw new Refusal(snippet(s.slice(start, end + 1)), "ANSI-C quoting `$'…'` with backslash escapes is read differently by different shells");
        }
        this.pos = end + 1;
        return { literal: null, quoted: true };
      }
      if (mode === 'param') throw new Refusal(snippet(s.slice(start)), 'quotes inside `${…}` are not supported');
      return { literal: '$', quoted };
    }
    if (c === '"') {
      if (mode === 'unquoted') {
        // bash: translated string (like "…"); dash: `$` followed by "…".
        this.pos++;
        this.readDoubleQuoted(assigns);
        return { literal: null, quoted: true };
      }
      if (mode === 'param') throw new Refusal(snippet(s.slice(start)), 'quotes inside `${…}` are not supported');
      return { literal: '$', quoted };
    }
    if (c !== '' && NAME_START.test(c)) {
      while (NAME_CHAR.test(this.cur())) this.pos++;
      return { literal: null, quoted };
    }
    if (c !== '' && SPECIAL_PARAMS.includes(c)) {
      this.pos++;
      // $# $? $$ $! always expand to one number: they never split (IFS cannot be changed).
      return { literal: null, quoted: quoted || '#?$!'.includes(c) };
    }
    return { literal: '$', quoted };
  }

  /** `${…}`: only the POSIX forms, with a word that holds no quotes, backslashes or braces. */
  private readBraceParameter(start: number, assigns: string[]): void {
    const s = this.src;
    const fail = (why: string): never => {
      const end = s.indexOf('}', start);
      throw new Refusal(snippet(end === -1 ? s.slice(start) : s.slice(start, end + 1)), why);
    };
    let length = false;
    if (this.cur() === '#') {
      this.pos++;
      if (this.cur() === '}') {
        this.pos++;
        return;
      }
      length = true;
    }
    let name = '';
    const c = this.cur();
    if (c !== '' && NAME_START.test(c)) {
      while (NAME_CHAR.test(this.cur())) {
        name += this.cur();
        this.pos++;
      }
    } else if (c !== '' && /[0-9]/.test(c)) {
      while (/[0-9]/.test(this.cur())) {
        name += this.cur();
        this.pos++;
      }
    } else if (c !== '' && '@*#?-$!'.includes(c)) {
      name = c;
      this.pos++;
    } else {
      fail('this parameter expansion is not supported (only the POSIX forms are)');
    }
    if (this.cur() === '}') {
      this.pos++;
      return;
    }
    if (length) fail('this parameter expansion is not supported (only the POSIX forms are)');
    // operator
    let op = this.cur();
    this.pos++;
    if (op === ':') {
      const o = this.cur();
      if (o !== '-' && o !== '=' && o !== '?' && o !== '+') fail('substring and other non-POSIX parameter expansions are not supported');
      this.pos++;
      op = o;
    } else if (op === '%' || op === '#') {
      if (this.cur() === op) this.pos++;
    } else if (op !== '-' && op !== '=' && op !== '?' && op !== '+') {
      fail('this parameter expansion is not supported (only the POSIX forms are)');
    }
    if (op === '=') {
      if (!NAME_START.test(name[0] ?? '')) fail('this parameter expansion is not supported');
      assigns.push(name);
    }
    // the word
    for (;;) {
      const w = this.cur();
      if (w === '') fail('a `${` is not closed');
      if (w === '}') {
        this.pos++;
        return;
      }
      if (w === "'" || w === '"' || w === '\\' || w === '{' || w === '\n') {
        fail('quotes, backslashes, braces and newlines inside `${…}` are not supported');
      }
      if (w === '`') throw new Refusal(this.substitutionText(this.pos), 'command substitution with backquotes runs a command that cannot be checked');
      if (w === '$') {
        this.readDollar('param', assigns);
        continue;
      }
      this.pos++;
    }
  }

  /**
   * `$((…))` after the two parentheses. Only numbers and operators are accepted: bash evaluates
   * a variable's value as an expression, and an array subscript in that value runs commands.
   */
  private readArithmetic(start: number): void {
    let depth = 0;
    for (;;) {
      const c = this.cur();
      if (c === '') throw new Refusal('$((', 'an arithmetic expansion is not closed');
      if (c === '(') {
        depth++;
        this.pos++;
      } else if (c === ')') {
        this.pos++;
        if (depth > 0) depth--;
        else if (this.cur() === ')') {
          this.pos++;
          return;
        } else {
          throw new Refusal(snippet(this.src.slice(start, this.pos)), 'this `$((…` is ambiguous (arithmetic or a command substitution)');
        }
      } else if (/[0-9]/.test(c)) {
        while (/[0-9A-Za-z_#@]/.test(this.cur())) this.pos++;
      } else if (' \t\n+-*/%<>=!~^&|?:,'.includes(c)) {
        this.pos++;
      } else if (NAME_START.test(c) || c === '$') {
        const end = this.src.indexOf('))', start);
        throw new Refusal(
          snippet(end === -1 ? this.src.slice(start) : this.src.slice(start, end + 2)),
          'arithmetic on variables is not allowed: bash evaluates a variable\'s value as an expression, which can run commands',
        );
      } else {
        throw new Refusal(snippet(this.src.slice(start, this.pos + 1)), `the character \`${c}\` is not supported inside \`$((…))\``);
      }
    }
  }

  private readHeredocBodies(): void {
    const s = this.src;
    const pending = this.heredocs;
    this.heredocs = [];
    for (const doc of pending) {
      for (;;) {
        if (this.pos >= s.length) throw new Refusal(`<<${doc.delimiter}`, 'a here-document is not terminated');
        const nl = s.indexOf('\n', this.pos);
        const end = nl === -1 ? s.length : nl;
        let line = s.slice(this.pos, end);
        this.pos = nl === -1 ? s.length : nl + 1;
        if (doc.stripTabs) line = line.replace(/^\t+/, '');
        if (line === doc.delimiter) break;
        if (doc.quoted) continue;
        // dash and bash disagree on whether a backslash-newline can form the delimiter line.
        if (line.endsWith('\\')) {
          throw new Refusal(`<<${doc.delimiter}`, 'a line ending with a backslash in an unquoted here-document is ambiguous; quote the delimiter');
        }
        if (line.includes('$') || line.includes('`')) scanHeredocLine(line);
      }
    }
  }
}

/** Scans one line of an unquoted here-document for expansions (which must be harmless). */
function scanHeredocLine(line: string): void {
  const lx = new Lexer(line);
  const assigns: string[] = [];
  while (lx.pos < line.length) {
    const c = line[lx.pos];
    if (c === '\\') lx.pos += 2;
    else if (c === '`') throw new Refusal(snippet(line.slice(lx.pos)), 'command substitution with backquotes in a here-document runs a command that cannot be checked');
    else if (c === '$') lx.readDollar('heredoc', assigns);
    else lx.pos++;
  }
  if (assigns.length > 0) {
    throw new Refusal(`\${${assigns[0]}=…}`, 'assignments inside a here-document are not supported');
  }
}

function stripContinuations(text: string): string {
  return text.includes('\\\n') ? text.replaceAll('\\\n', '') : text;
}

/** Quote removal for a word known to hold no expansions (a here-document delimiter). */
function removeQuotes(raw: string): string | null {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '\\') {
      out += raw[i + 1] ?? '';
      i++;
    } else if (c === "'") {
      const end = raw.indexOf("'", i + 1);
      if (end === -1) return null;
      out += raw.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < raw.length && raw[j] !== '"'; j++) {
        if (raw[j] === '\\' && '$`"\\'.includes(raw[j + 1] ?? '')) j++;
        out += raw[j];
      }
      i = j;
    } else out += c;
  }
  return out;
}

const RESERVED_CLOSERS = new Set(['then', 'else', 'elif', 'fi', 'do', 'done', 'esac', '}', 'in']);
const CLOSE_BRACE = new Set(['}']);
const THEN = new Set(['then']);
const AFTER_THEN = new Set(['elif', 'else', 'fi']);
const FI = new Set(['fi']);
const DO = new Set(['do']);
const DONE = new Set(['done']);
const ESAC = new Set(['esac']);
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=/;
const REDIRECT_OPS = new Set(['<', '>', '>>', '<&', '>&', '<>', '>|', '<<', '<<-', '<<<']);

class Parser {
  private readonly lx: Lexer;
  private depth: number;

  constructor(src: string, depth: number) {
    this.lx = new Lexer(src);
    this.depth = depth;
  }

  private syntax(what: string): never {
    throw new Refusal(what, `syntax error near \`${what}\`; the command is not run`);
  }

  private tokenText(tok: Token): string {
    switch (tok.t) {
      case 'word':
        return tok.w.raw;
      case 'op':
      case 'io':
        return tok.v;
      case 'nl':
        return 'newline';
      default:
        return 'end of command';
    }
  }

  private isWord(tok: Token, text: string): boolean {
    return tok.t === 'word' && tok.w.raw === text;
  }

  private skipNewlines(): void {
    while (this.lx.peek().t === 'nl') this.lx.next();
  }

  private enter(): void {
    if (++this.depth > MAX_NESTING) {
      throw new Refusal('nesting', `the command nests more than ${MAX_NESTING} levels deep`);
    }
  }

  parseScript(): Command[] {
    const out: Command[] = [];
    this.parseList(out, null);
    const tok = this.lx.peek();
    if (tok.t !== 'eof') this.syntax(this.tokenText(tok));
    return out;
  }

  /**
   * A list of and-or lists separated by `;`, `&` or newlines, ending before one of `closers`
   * (reserved words), `)`, `;;` or the end. Returns how many and-or lists it read.
   */
  private parseList(out: Command[], closers: ReadonlySet<string> | null): number {
    let count = 0;
    for (;;) {
      this.skipNewlines();
      const tok = this.lx.peek();
      if (tok.t === 'eof') return count;
      if (tok.t === 'op' && (tok.v === ')' || tok.v === ';;')) return count;
      if (tok.t === 'word' && closers !== null && closers.has(tok.w.raw)) return count;
      this.parseAndOr(out);
      count++;
      const sep = this.lx.peek();
      if (sep.t === 'op' && (sep.v === ';' || sep.v === '&')) {
        this.lx.next();
        continue;
      }
      if (sep.t === 'nl') continue;
      return count;
    }
  }

  private parseAndOr(out: Command[]): void {
    for (;;) {
      this.parsePipeline(out);
      const tok = this.lx.peek();
      if (tok.t === 'op' && (tok.v === '&&' || tok.v === '||')) {
        this.lx.next();
        this.skipNewlines();
        continue;
      }
      return;
    }
  }

  private parsePipeline(out: Command[]): void {
    while (this.isWord(this.lx.peek(), '!')) this.lx.next();
    for (;;) {
      out.push(this.parseCommand());
      const tok = this.lx.peek();
      if (tok.t === 'op' && tok.v === '|') {
        this.lx.next();
        this.skipNewlines();
        continue;
      }
      return;
    }
  }

  private parseCommand(): Command {
    const tok = this.lx.peek();
    if (tok.t === 'op' && tok.v === '(') {
      this.lx.next();
      return this.compound(() => this.parseGroup(')'));
    }
    if (tok.t === 'word') {
      switch (tok.w.raw) {
        case '{':
          this.lx.next();
          return this.compound(() => this.parseGroup('}'));
        case 'if':
          this.lx.next();
          return this.compound(() => this.parseIf());
        case 'while':
        case 'until':
          this.lx.next();
          return this.compound(() => this.parseLoop());
        case 'for':
          this.lx.next();
          return this.compound(() => this.parseFor());
        case 'case':
          this.lx.next();
          return this.compound(() => this.parseCase());
        case 'function':
          throw new Refusal('function', 'the bash `function` keyword is not supported; define functions as `name() { …; }`');
        case 'select':
          throw new Refusal('select', 'the bash `select` loop is not supported');
        case 'coproc':
          throw new Refusal('coproc', 'bash coprocesses are not supported; run the command with `&` instead');
        default:
          if (RESERVED_CLOSERS.has(tok.w.raw) && tok.w.raw !== 'in') this.syntax(tok.w.raw);
      }
    }
    return this.parseSimple();
  }

  private compound(read: () => CompoundCommand): CompoundCommand {
    this.enter();
    const cmd = read();
    this.depth--;
    this.parseTrailingRedirects(cmd);
    return cmd;
  }

  private parseTrailingRedirects(cmd: CompoundCommand): void {
    for (;;) {
      const tok = this.lx.peek();
      if (tok.t === 'io' || (tok.t === 'op' && REDIRECT_OPS.has(tok.v))) {
        const w = this.parseRedirect();
        if (w) cmd.words.push(w);
        continue;
      }
      if (tok.t === 'word') this.syntax(tok.w.raw);
      return;
    }
  }

  private expectWord(text: string): void {
    const tok = this.lx.next();
    if (!this.isWord(tok, text)) this.syntax(this.tokenText(tok));
  }

  private nonEmptyList(out: Command[], closers: ReadonlySet<string> | null, what: string): void {
    if (this.parseList(out, closers) === 0) this.syntax(what);
  }

  private parseGroup(close: ')' | '}'): CompoundCommand {
    const body: Command[] = [];
    this.nonEmptyList(body, close === '}' ? CLOSE_BRACE : null, close);
    const tok = this.lx.next();
    if (close === ')' ? !(tok.t === 'op' && tok.v === ')') : !this.isWord(tok, '}')) this.syntax(this.tokenText(tok));
    return { type: 'compound', body, words: [] };
  }

  private parseIf(): CompoundCommand {
    const body: Command[] = [];
    for (;;) {
      this.nonEmptyList(body, THEN, 'then');
      this.expectWord('then');
      this.nonEmptyList(body, AFTER_THEN, 'fi');
      const tok = this.lx.next();
      if (this.isWord(tok, 'elif')) continue;
      if (this.isWord(tok, 'else')) {
        this.nonEmptyList(body, FI, 'fi');
        this.expectWord('fi');
      } else if (!this.isWord(tok, 'fi')) this.syntax(this.tokenText(tok));
      return { type: 'compound', body, words: [] };
    }
  }

  private parseDoGroup(body: Command[]): void {
    this.skipNewlines();
    this.expectWord('do');
    this.nonEmptyList(body, DONE, 'done');
    this.expectWord('done');
  }

  private parseLoop(): CompoundCommand {
    const body: Command[] = [];
    this.nonEmptyList(body, DO, 'do');
    this.parseDoGroup(body);
    return { type: 'compound', body, words: [] };
  }

  private parseFor(): CompoundCommand {
    const nameTok = this.lx.next();
    if (nameTok.t !== 'word') this.syntax(this.tokenText(nameTok));
    const words: Word[] = [];
    const body: Command[] = [];
    this.skipNewlines();
    let tok = this.lx.peek();
    if (this.isWord(tok, 'in')) {
      this.lx.next();
      for (;;) {
        tok = this.lx.peek();
        if (tok.t !== 'word') break;
        words.push(tok.w);
        this.lx.next();
      }
      if (tok.t === 'op' && tok.v === ';') this.lx.next();
      else if (tok.t !== 'nl') this.syntax(this.tokenText(tok));
    } else if (tok.t === 'op' && tok.v === ';') {
      this.lx.next();
    }
    this.parseDoGroup(body);
    return { type: 'compound', body, words, loopVariable: nameTok.w };
  }

  private parseCase(): CompoundCommand {
    const subject = this.lx.next();
    if (subject.t !== 'word') this.syntax(this.tokenText(subject));
    const words: Word[] = [subject.w];
    const body: Command[] = [];
    this.skipNewlines();
    this.expectWord('in');
    const esac = ESAC;
    for (;;) {
      this.skipNewlines();
      let tok = this.lx.next();
      if (this.isWord(tok, 'esac')) break;
      if (tok.t === 'op' && tok.v === '(') tok = this.lx.next();
      for (;;) {
        if (tok.t !== 'word') this.syntax(this.tokenText(tok));
        words.push(tok.w);
        tok = this.lx.next();
        if (tok.t === 'op' && tok.v === '|') {
          tok = this.lx.next();
          continue;
        }
        break;
      }
      if (!(tok.t === 'op' && tok.v === ')')) this.syntax(this.tokenText(tok));
      this.parseList(body, esac);
      tok = this.lx.peek();
      if (tok.t === 'op' && tok.v === ';;') {
        this.lx.next();
        continue;
      }
      if (this.isWord(tok, 'esac')) {
        this.lx.next();
        break;
      }
      this.syntax(this.tokenText(tok));
    }
    return { type: 'compound', body, words };
  }

  /** Parses one redirection; returns its target word (null for a here-document). */
  private parseRedirect(): Word | null {
    let tok = this.lx.next();
    if (tok.t === 'io') tok = this.lx.next();
    if (tok.t !== 'op' || !REDIRECT_OPS.has(tok.v)) this.syntax(this.tokenText(tok));
    const op = tok.v;
    const target = this.lx.next();
    if (target.t !== 'word') this.syntax(this.tokenText(target));
    if (op === '<<' || op === '<<-') {
      this.lx.addHeredoc(target.w, op === '<<-');
      return null;
    }
    return target.w;
  }

  private parseSimple(): Command {
    const assignments: Assignment[] = [];
    const words: Word[] = [];
    const redirectTargets: Word[] = [];
    for (;;) {
      const tok = this.lx.peek();
      if (tok.t === 'io' || (tok.t === 'op' && REDIRECT_OPS.has(tok.v))) {
        const w = this.parseRedirect();
        if (w) redirectTargets.push(w);
        continue;
      }
      if (tok.t !== 'word') break;
      this.lx.next();
      if (words.length === 0) {
        const m = ASSIGNMENT.exec(tok.w.raw);
        if (m) {
          assignments.push({ name: m[1]!, word: tok.w });
          continue;
        }
      }
      words.push(tok.w);
    }
    const tok = this.lx.peek();
    if (tok.t === 'op' && tok.v === '(') {
      // a function definition: NAME ( ) body
      if (words.length !== 1 || assignments.length > 0 || redirectTargets.length > 0) this.syntax('(');
      this.lx.next();
      const close = this.lx.next();
      if (!(close.t === 'op' && close.v === ')')) this.syntax(this.tokenText(close));
      this.skipNewlines();
      this.enter();
      const body = this.parseCommand();
      this.depth--;
      return { type: 'function', name: words[0]!, body };
    }
    if (words.length === 0 && assignments.length === 0 && redirectTargets.length === 0) {
      this.syntax(this.tokenText(tok));
    }
    return { type: 'simple', assignments, words, redirects: redirectTargets };
  }
}

/** Parses a script; throws a {@link Refusal} for anything unsupported. */
export function parseScript(src: string, depth = 0): Command[] {
  if (depth > MAX_NESTING) throw new Refusal('nesting', `the command nests more than ${MAX_NESTING} levels deep`);
  return new Parser(src, depth).parseScript();
}

/** A word from an argv array: taken exactly as given. */
export function literalWord(text: string): Word {
  return { raw: text, value: text, singleField: true, assigns: [] };
}
