// Builds @paddock/sdk (shared/sdk) into shared/sdk/dist: one ES module per source file for Node 20
// and newer (or any runtime with fetch), with declarations. Run by the package's prepack, or
// `npm run sdk:build`. It has no dependencies: nothing to bundle.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const sdk = resolve(import.meta.dirname, '..', 'shared', 'sdk');
const dist = join(sdk, 'dist');
rmSync(dist, { recursive: true, force: true });
execFileSync('tsc', ['-p', join(sdk, 'tsconfig.build.json')], { stdio: 'inherit' });
// The sources import each other as .ts (Node runs them as they are); the emitted JavaScript says
// .js already, the declarations are made to say it too, for consumers' module resolution.
for (const file of readdirSync(dist).filter((f) => f.endsWith('.d.ts'))) {
  const path = join(dist, file);
  writeFileSync(path, readFileSync(path, 'utf8').replace(/(from\s+'\.\/[^']+)\.ts'/g, "$1.js'"));
}
process.stderr.write(`built shared/sdk/dist (@paddock/sdk ${(JSON.parse(readFileSync(join(sdk, 'package.json'), 'utf8')) as { version: string }).version})\n`);
