// `paddock mcp init <target>`: writes Paddock's server entry into an MCP client's own config file.
import { chmodSync, constants, copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import {
  DEFAULT_COMMAND,
  MCP_TARGET_NAMES,
  REMOTE_FIELDS,
  SERVER_NAME,
  STDIO_FIELDS,
  findMcpTarget,
  managedFields,
  resolveConfigPath,
  scopesOf,
  type McpScope,
  type McpTarget,
  type McpTransport,
  type PlatformContext,
} from '../../shared/mcp/targets.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { ConfigMergeError, mergeEntry } from './merge.ts';

/** A request `mcp init` refuses: unknown target or scope, or a file it will not edit. */
export class McpInitError extends CliError {
  override name = 'McpInitError';
}

export interface McpInitOptions {
  target: string;
  /** Default user. */
  scope?: McpScope;
  /** The command the entry runs; by default resolveCommand() (user scope) or plain `paddock` (project scope). */
  command?: string;
  /** Compute the result but write nothing. */
  print?: boolean;
  ctx: PlatformContext;
  resolveCommand?: () => string | ServerCommand;
  /** stdio (default): the app runs `paddock mcp serve`; http: it connects to remoteUrl (/v1/mcp). */
  transport?: McpTransport;
  remoteUrl?: string;
  now?: () => Date;
}

/** A command and the arguments before `mcp serve`: a Node and the CLI's own script, say. */
export interface ServerCommand {
  command: string;
  launcher: string[];
}

export type McpInitStatus = 'created' | 'updated' | 'unchanged';

export interface McpInitResult {
  target: McpTarget;
  scope: McpScope;
  /** The config file (symlinks resolved, when the file exists). */
  path: string;
  /** created: a new file; updated: the entry was added or changed; unchanged: it was already there. */
  status: McpInitStatus;
  /** Whether the file was written (never with print). */
  written: boolean;
  /** The copy of the previous file, when one was made. */
  backup?: string;
  /** The whole file as it is (or, with print, would be) afterwards. */
  text: string;
  command: string;
  /** The arguments before `mcp serve`. */
  launcher: string[];
}

/** `20250102T030405Z`: sorts by time and is a valid file name everywhere. */
export function backupStamp(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');
}

export function mcpInit(options: McpInitOptions): McpInitResult {
  const target = findMcpTarget(options.target);
  if (!target) throw new McpInitError(`Unknown MCP client "${options.target}".`, {
      hint: `Choose one of: ${MCP_TARGET_NAMES.join(', ')}.`,
      exitCode: EXIT_USAGE,
      code: 'unknown_target',
    });
  const scope = options.scope ?? 'user';
  if (!target.scopes[scope]) {
    throw new McpInitError(`${target.label} has no ${scope} scope.`, {
      hint: `Use --scope ${scopesOf(target).join(' or --scope ')}.`,
      exitCode: EXIT_USAGE,
      code: 'unknown_scope',
    });
  }
  // A project file is shared (checked in), so it names the command, not this machine's path to it.
  const resolved = options.command ?? (scope === 'project' ? DEFAULT_COMMAND : (options.resolveCommand?.() ?? DEFAULT_COMMAND));
  const { command, launcher } = typeof resolved === 'string' ? { command: resolved, launcher: [] } : resolved;

  let path = resolveConfigPath(target, scope, options.ctx);
  let original = '';
  const exists = existsSync(path);
  if (exists) {
    path = realpathSync(path); // edit the file a symlink (a dotfiles manager's) points at, keep the link
    if (!statSync(path).isFile()) throw new McpInitError(`${path} is not a file.`, { code: 'config_unreadable' });
    original = readFileSync(path, 'utf8');
  }

  const remote = options.transport === 'http';
  if (remote && (!target.remote || target.format === 'toml')) {
    throw new McpInitError(`paddock cannot add a remote server to ${target.label}'s config file.`, {
      hint: target.remote ? `Merge the snippet of \`GET /v1/mcp/config?target=${target.name}&transport=http\` by hand, or use --transport stdio.` : 'Use --transport stdio.',
      exitCode: EXIT_USAGE,
      code: 'unsupported_transport',
    });
  }
  if (remote && !options.remoteUrl) {
    throw new McpInitError('No API base URL is configured for the remote server.', { hint: 'Run `paddock login` (or `paddock config set-url`) first.', code: 'not_configured' });
  }
  const change = remote
    ? { serversKey: target.serversKey, name: SERVER_NAME, fields: target.remote!(options.remoteUrl!), defaults: {}, removed: STDIO_FIELDS }
    : { serversKey: target.serversKey, name: SERVER_NAME, fields: managedFields(target, command, launcher), defaults: { ...target.defaults }, removed: REMOTE_FIELDS };
  let merged;
  try {
    merged = mergeEntry(target.format, original, change, path);
  } catch (err) {
    if (!(err instanceof ConfigMergeError)) throw err;
    throw new McpInitError(err.message, { code: 'config_not_editable' });
  }
  const status: McpInitStatus = !exists ? 'created' : merged.changed ? 'updated' : 'unchanged';
  const result: McpInitResult = { target, scope, path, status, written: false, text: merged.text, command, launcher };
  if (options.print || status === 'unchanged') return result;

  mkdirSync(dirname(path), { recursive: true });
  let mode: number | undefined;
  if (exists) {
    mode = statSync(path).mode & 0o7777;
    result.backup = backup(path, (options.now ?? (() => new Date()))());
  }
  writeAtomically(path, merged.text, mode);
  result.written = true;
  return result;
}

/** Copies the file to `<file>.bak-<timestamp>` (never over an older backup). */
function backup(path: string, now: Date): string {
  const base = `${path}.bak-${backupStamp(now)}`;
  for (let n = 0; ; n++) {
    const candidate = n === 0 ? base : `${base}-${n}`;
    try {
      copyFileSync(path, candidate, constants.COPYFILE_EXCL);
      return candidate;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

/** Writes beside the file, then renames over it: a reader never sees half a file. */
function writeAtomically(path: string, text: string, mode: number | undefined): void {
  const tmp = `${path}.paddock-${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, text, { mode: mode ?? 0o644, flag: 'wx' });
    if (mode !== undefined) chmodSync(tmp, mode); // exactly the old mode, whatever the umask
    renameSync(tmp, path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw err;
  }
}
