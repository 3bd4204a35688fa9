// Builds the CLI package's bundle, cli/dist/paddock.js: cli/main.ts and everything it imports (the
// SDK, Ink, React, commander, the MCP SDK…) as ES modules for every supported Node release line,
// so the packed @paddock/cli installs on its own (`npm install -g ./paddock-cli-*.tgz`) with
// nothing looked up on the registry. What main.ts imports on demand (the TUI, the MCP server) is
// split into chunks of its own, so a plain subcommand parses a sixth of the code and starts on half
// the CPU (`paddock session ls`: 0.22 s against 0.44 s). Run by the package's prepack, or `npm run cli:build`.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const root = resolve(import.meta.dirname, '..');
const cliDir = join(root, 'cli');
const outDir = join(cliDir, 'dist');
const { version } = JSON.parse(readFileSync(join(cliDir, 'package.json'), 'utf8')) as { version: string };
const { MINIMUM_MAJOR } = (await import(join(cliDir, 'bin/check-node.cjs'))) as { MINIMUM_MAJOR: number };

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
// Ink loads React's devtools only when DEV=true; the bundle leaves them out.
const devtoolsStub = join(mkdtempSync(join(tmpdir(), 'paddock-cli-build-')), 'devtools-stub.mjs');
writeFileSync(devtoolsStub, 'export default { initialize() {}, connectToDevTools() {} };\n');

await build({
  entryPoints: [join(cliDir, 'main.ts')],
  outdir: outDir,
  entryNames: 'paddock',
  chunkNames: '[name]-[hash]',
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: `node${MINIMUM_MAJOR}`,
  // ES module builds where packages have them (jsonc-parser's UMD one requires files at run time).
  mainFields: ['module', 'main'],
  alias: { 'react-devtools-core': devtoolsStub },
  define: { 'process.env.NODE_ENV': '"production"' },
  // Bundled CommonJS dependencies call require() for Node's own modules.
  banner: { js: "import { createRequire as __paddockRequire } from 'node:module';\nconst require = __paddockRequire(import.meta.url);" },
  legalComments: 'linked',
  logLevel: 'warning',
});
process.stderr.write(`built cli/dist/paddock.js (@paddock/cli ${version})\n`);
