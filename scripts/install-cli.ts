// `npm run cli:install [-- --prefix DIR]`: packs the CLI (@paddock/cli, built by its prepack) and
// installs the tarball globally, or under DIR, so that `paddock` is on the PATH of every shell.
// The tarball holds everything the CLI needs: the install looks nothing up on the registry.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const prefixAt = process.argv.indexOf('--prefix');
const prefix = prefixAt >= 0 ? process.argv[prefixAt + 1] : undefined;
const out = mkdtempSync(join(tmpdir(), 'paddock-cli-pack-'));
const npm = (args: string[]) => execFileSync('npm', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

const packed = JSON.parse(npm(['pack', './cli', '--pack-destination', out, '--json'])) as { filename: string }[];
const tarball = join(out, packed[0]!.filename);
npm(['install', '--global', '--offline', '--no-audit', '--no-fund', ...(prefix ? ['--prefix', resolve(prefix)] : []), tarball]);
const bin = prefix ? join(resolve(prefix), 'bin') : npm(['prefix', '--global']).trim() + '/bin';
process.stdout.write(`installed paddock from ${tarball} into ${bin}\n`);
