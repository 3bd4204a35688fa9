import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { CliError } from '../errors.ts';

/** What the per-user config file holds. */
export interface ConfigFile {
  base_url?: string;
  api_key?: string;
}

/** Reads the config file; a missing file is an empty config. */
export function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(`Cannot read ${path}: ${(err as Error).message}`);
  }
  let data: Record<string, unknown>;
  try {
    data = parse(text);
  } catch (err) {
    throw new CliError(`${path} is not valid TOML: ${(err as Error).message.split('\n')[0]}`, {
      hint: 'Fix or delete the file, then set it again with `paddock config set-url` and `paddock config set-key`.',
    });
  }
  const out: ConfigFile = {};
  if (typeof data.base_url === 'string') out.base_url = data.base_url;
  if (typeof data.api_key === 'string') out.api_key = data.api_key;
  return out;
}

/**
 * Writes the config file with mode 0600 (it holds a full-privilege key) in a 0700 folder:
 * written to a private temporary file first and renamed over, so it is never readable by others,
 * not even for a moment, and never half-written.
 */
export function writeConfigFile(path: string, config: ConfigFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  const body = `# Paddock CLI configuration (written by \`paddock config\`; mode 0600)\n${stringify(config)}\n`;
  writeFileSync(tmp, body, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** Reads, changes and writes the config file. */
export function updateConfigFile(path: string, change: (config: ConfigFile) => void): ConfigFile {
  const config = readConfigFile(path);
  change(config);
  writeConfigFile(path, config);
  return config;
}
