import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// The version of @paddock/cli, read from its package.json (one source of truth): cli/package.json
// next to this file in the sources, one folder up from the bundle (dist/) in the installed package.
const manifest = [join(import.meta.dirname, 'package.json'), join(import.meta.dirname, '..', 'package.json')].find(existsSync)!;
export const CLI_VERSION: string = (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
