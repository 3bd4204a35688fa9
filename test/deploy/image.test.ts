// The Dockerfile, checked without a Docker engine: its shape (multi-stage, Node 24, production
// dependencies only, a non-root user, a health check, the web role by default), that it copies
// every source file the three Procfile roles load and that every package they import is a
// production dependency (a devDependency would be missing from the image), that .dockerignore
// lets those files through and keeps local state out, and that its HEALTHCHECK command works.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { builtinModules } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '../..');

interface Instruction {
  keyword: string;
  args: string;
}

interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}

/** The Dockerfile's instructions, line continuations joined and comments dropped. */
function parseDockerfile(text: string): { args: Record<string, string>; stages: Stage[] } {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (pending === '' && /^\s*#/.test(line)) continue;
    if (pending !== '' && /^\s*#/.test(line)) continue; // a comment inside a continued instruction
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    if (full !== '') logical.push(full);
  }
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of logical) {
    const m = /^(\S+)\s*(.*)$/.exec(line)!;
    const keyword = m[1]!.toUpperCase();
    const rest = m[2]!.replace(/\s+/g, ' ').trim();
    if (keyword === 'FROM') {
      const from = /^(?:--platform=\S+ )?(\S+)(?: AS (\S+))?$/i.exec(rest);
      assert.ok(from, `cannot read FROM ${rest}`);
      const image = from[1]!.replace(/\$\{?(\w+)\}?/g, (_, name: string) => args[name] ?? `\${${name}}`);
      stages.push({ from: image, ...(from[2] ? { name: from[2] } : {}), instructions: [] });
    } else if (keyword === 'ARG' && stages.length === 0) {
      const [name, value] = rest.split('=', 2);
      args[name!] = value ?? '';
    } else {
      assert.ok(stages.length > 0, `${keyword} before the first FROM`);
      stages.at(-1)!.instructions.push({ keyword, args: rest });
    }
  }
  return { args, stages };
}

const dockerfile = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const final = dockerfile.stages.at(-1)!;
const finalOf = (keyword: string) => final.instructions.filter((i) => i.keyword === keyword);

const PROCFILE = Object.fromEntries(
  readFileSync(join(ROOT, 'Procfile'), 'utf8')
    .split('\n')
    .filter((l) => l.includes(':'))
    .map((l) => [l.slice(0, l.indexOf(':')).trim(), l.slice(l.indexOf(':') + 1).trim()]),
) as Record<string, string>;

/** Paths the final stage copies from the build context (not from another stage). */
function copiedFromContext(): string[] {
  const sources: string[] = [];
  for (const { args } of finalOf('COPY')) {
    if (/--from=/.test(args)) continue;
    const parts = args.split(' ').filter((p) => !p.startsWith('--'));
    sources.push(...parts.slice(0, -1).map((p) => p.replace(/\/$/, '')));
  }
  return sources;
}

/** Every module a Node process loads from an entry file: local files, and bare specifiers. */
function moduleGraph(entries: string[]): { files: Set<string>; packages: Map<string, string> } {
  const files = new Set<string>();
  const packages = new Map<string, string>(); // package → a file that imports it
  const queue = [...entries];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    if (!/\.(ts|js|mjs)$/.test(file)) continue;
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const specifiers: string[] = [];
    const visit = (node: ts.Node) => {
      // Only `import type` and `export type` are erased by Node's type stripping; an import of
      // types alone in braces (`import { type A } from 'x'`) still loads x.
      if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) {
        specifiers.push(node.moduleSpecifier.text);
      } else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        specifiers.push(node.moduleSpecifier.text);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        // A literal cast to string (`import('node:fs' as string)`, which TypeScript leaves unresolved) is a literal still.
        const [given] = node.arguments;
        const arg = given && ts.isAsExpression(given) ? given.expression : given;
        assert.ok(arg && ts.isStringLiteralLike(arg), `${relative(ROOT, file)}: a dynamic import of a computed name, which this check cannot follow`);
        specifiers.push(arg.text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    for (const specifier of specifiers) {
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier);
        assert.ok(existsSync(target), `${relative(ROOT, file)} imports ${specifier}, which does not exist`);
        queue.push(target);
      } else if (!specifier.startsWith('node:') && !builtinModules.includes(specifier)) {
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
        if (!packages.has(name)) packages.set(name, relative(ROOT, file));
      }
    }
  }
  return { files, packages };
}

/** Operator tools the image carries besides the roles, run with `kubectl exec … node <file>`. */
const TOOLS = ['scripts/reencrypt-secrets.ts'];

const ENTRIES = [
  ...Object.values(PROCFILE).map((cmd) => {
    const m = /^node (\S+\.ts)$/.exec(cmd);
    assert.ok(m, `Procfile command "${cmd}" is not "node <file>.ts"`);
    return join(ROOT, m[1]!);
  }),
  ...TOOLS.map((tool) => join(ROOT, tool)),
];

let graph: ReturnType<typeof moduleGraph> | undefined;
const rolesGraph = () => (graph ??= moduleGraph(ENTRIES));

describe('the Dockerfile', () => {
  test('is multi-stage, on Node 24, with pinned base images', () => {
    assert.ok(dockerfile.stages.length >= 2, 'a single stage');
    for (const stage of dockerfile.stages) {
      assert.match(stage.from, /^node:24(\.\d+)*-[a-z0-9-]+$|^node:24(\.\d+)*-[a-z0-9-]+@sha256:[0-9a-f]{64}$/, `base image ${stage.from}`);
    }
  });

  test('installs production dependencies only, from the lockfile, in a build stage', () => {
    const runs = dockerfile.stages.slice(0, -1).flatMap((s) => s.instructions.filter((i) => i.keyword === 'RUN').map((i) => ({ stage: s.name, run: i.args })));
    const install = runs.find(({ run }) => /\bnpm ci\b/.test(run));
    assert.ok(install, 'no stage runs npm ci');
    assert.match(install.run, /--omit=dev\b/);
    assert.ok(install.stage, 'the install stage has no name to copy from');
    const copy = finalOf('COPY').find((c) => c.args.includes(`--from=${install.stage}`));
    assert.match(copy?.args ?? '', /node_modules/, 'the final stage does not take node_modules from the install stage');
    assert.ok(!finalOf('RUN').some((r) => /\bnpm\b.*\b(install|ci)\b/.test(r.args)), 'the final stage installs packages itself');
  });

  test('runs as a non-root numeric user', () => {
    const users = finalOf('USER');
    assert.equal(users.length, 1);
    assert.match(users[0]!.args, /^10001(:10001)?$/);
  });

  test('runs the web role by default, and each Procfile role can be run as a command', () => {
    const cmd = finalOf('CMD');
    assert.equal(cmd.length, 1);
    assert.deepEqual(JSON.parse(cmd[0]!.args), PROCFILE.web!.split(' '));
    assert.deepEqual(Object.keys(PROCFILE).sort(), ['egress-gateway', 'release', 'web', 'worker']);
  });

  test('copies every file the roles and the operator tools load, and nothing of the tests, the CLI or local state', () => {
    const sources = copiedFromContext();
    const { files } = rolesGraph();
    const missing = [...files].map((f) => relative(ROOT, f)).filter((f) => !sources.some((s) => f === s || f.startsWith(`${s}/`)));
    assert.deepEqual(missing, [], `loaded by a role or a tool but not copied into the image:\n${missing.join('\n')}`);
    for (const needed of ['package.json', 'package-lock.json']) assert.ok(sources.includes(needed), needed);
    for (const excluded of ['.', 'test', 'cli', 'scripts', 'bench', '.paddock', 'node_modules', 'deploy']) {
      assert.ok(!sources.includes(excluded), `the image copies ${excluded}`);
    }
  });

  test('every package the roles import is a production dependency', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    const { packages } = rolesGraph();
    assert.ok(packages.size > 5, 'the import graph looks empty');
    const notProduction = [...packages].filter(([name]) => !(name in (pkg.dependencies ?? {}))).map(([name, file]) => `${name} (imported by ${file})`);
    assert.deepEqual(notProduction, [], `missing from the image, which installs dependencies only:\n${notProduction.join('\n')}`);
  });
});

describe('.dockerignore', () => {
  const lines = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));

  test('is an allowlist that lets through exactly what the image copies', () => {
    assert.equal(lines[0], '*', 'the first pattern must exclude everything');
    const allowed = lines.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    assert.deepEqual([...allowed].sort(), [...copiedFromContext()].sort());
  });

  test('keeps local state and secrets out even inside the allowed directories', () => {
    for (const pattern of ['**/node_modules', '**/.paddock', '**/*.env']) assert.ok(lines.includes(pattern), pattern);
  });
});

describe('the HEALTHCHECK', () => {
  const healthcheck = finalOf('HEALTHCHECK');
  const command = (): string[] => {
    assert.equal(healthcheck.length, 1, 'one HEALTHCHECK');
    const m = /\bCMD (\[.*\])$/.exec(healthcheck[0]!.args);
    assert.ok(m, 'HEALTHCHECK must use the exec form (no shell, no curl in the image)');
    const argv = JSON.parse(m[1]!) as string[];
    assert.equal(argv[0], 'node');
    return argv;
  };

  async function listen(status: number): Promise<{ server: Server; port: number }> {
    const server = createServer((req, res) => res.writeHead(req.url === '/healthz' ? status : 404).end());
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return { server, port: (server.address() as AddressInfo).port };
  }

  async function closedPort(): Promise<number> {
    const { server, port } = await listen(200);
    await new Promise((done) => server.close(done));
    return port;
  }

  function run(env: Record<string, string>): Promise<number | null> {
    const [, ...args] = command();
    return new Promise((done, fail) => {
      const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.on('error', fail);
      child.on('exit', (code) => {
        clearTimeout(timer);
        done(code);
      });
    });
  }

  test('is healthy when the API answers on PORT, or a worker on its metrics port', async () => {
    const ok = await listen(200);
    const closed = await closedPort();
    try {
      assert.equal(await run({ PORT: String(ok.port), PADDOCK_WORKER_METRICS_PORT: String(closed) }), 0, 'web role');
      assert.equal(await run({ PORT: String(closed), PADDOCK_WORKER_METRICS_PORT: String(ok.port) }), 0, 'worker role');
    } finally {
      ok.server.close();
    }
  });

  test('is unhealthy when nothing answers, or /healthz does not answer 200', async () => {
    const failing = await listen(503);
    const closed = await closedPort();
    try {
      assert.equal(await run({ PORT: String(closed), PADDOCK_WORKER_METRICS_PORT: String(await closedPort()) }), 1, 'nothing listening');
      assert.equal(await run({ PORT: String(failing.port), PADDOCK_WORKER_METRICS_PORT: String(closed) }), 1, '503');
    } finally {
      failing.server.close();
    }
  });
});
