// Which test files `npm test` runs on which runtime. A file that reads PADDOCK_TEST_RUNTIME, or
// imports (through any chain of the repository's own files) one that does, runs once per runtime;
// every other file behaves the same whatever the variable says, and runs once. A file that starts a
// runtime but tests what lies above it declares so with a line `// test-plan: once` (and why) and
// runs once: every test stops before the runtime (a credential refused, say), or it tests a client
// of the HTTP API (the CLI, the SDKs, MCP), the API's own handling of requests or the control
// plane's own failures (a web killed, Redis or PostgreSQL away), while what the
// routes ask of a runtime is pinned on both by the suites of the routes themselves.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|(?:^|[\s;])import\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/gm;
const RUNS_ONCE = /^\/\/ test-plan: once\b/m;

/** Whether a test file's text declares it runs once (`// test-plan: once`, and why). */
export const declaresOnce = (text: string): boolean => RUNS_ONCE.test(text);
const READS_RUNTIME = /process\.env\.PADDOCK_TEST_RUNTIME\b|process\.env\[['"]PADDOCK_TEST_RUNTIME['"]\]/;

/** The code of a file without its comments, so a comment that names the variable does not count. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** Whether `file` (absolute) reaches a reader of PADDOCK_TEST_RUNTIME; memoised over one plan. */
function reachesRuntime(file: string, seen: Map<string, boolean>): boolean {
  const known = seen.get(file);
  if (known !== undefined) return known;
  seen.set(file, false); // a cycle adds nothing the rest of it does not
  let text: string;
  try {
    text = code(readFileSync(file, 'utf8'));
  } catch {
    return false;
  }
  let reaches = READS_RUNTIME.test(text);
  for (const match of text.matchAll(IMPORT)) {
    if (reaches) break;
    const target = resolve(dirname(file), (match[1] ?? match[2])!);
    if (target.includes(`${join('/', 'node_modules', '/')}`) || !existsSync(target)) continue;
    reaches = reachesRuntime(target, seen);
  }
  seen.set(file, reaches);
  return reaches;
}

export interface TestPlan {
  /** Files run once per runtime. */
  perRuntime: string[];
  /** Files run once, whatever the runtime. */
  once: string[];
}

/** Splits test files (paths relative to `root`) into those run per runtime and those run once. */
export function planTests(root: string, files: string[]): TestPlan {
  const seen = new Map<string, boolean>();
  const plan: TestPlan = { perRuntime: [], once: [] };
  for (const file of files) {
    const path = resolve(root, file);
    const once = declaresOnce(readFileSync(path, 'utf8')) || !reachesRuntime(path, seen);
    (once ? plan.once : plan.perRuntime).push(file);
  }
  return plan;
}

/** Every `*.test.ts` under `dir` (relative to `root`), sorted. */
export function findTestFiles(root: string, dir = 'test'): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.test.ts')) found.push(relative(root, path));
    }
  };
  walk(resolve(root, dir));
  return found.sort();
}
