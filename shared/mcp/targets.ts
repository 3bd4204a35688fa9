// The MCP clients `paddock mcp init <target>` and `GET /v1/mcp/config?target=` know: one entry per
// client, with where its config file lives on each OS, the file's format, the key that holds its
// servers and the shape of a server entry. The API answers snippets from this table and the CLI
// merges entries into real files from it, so the two cannot disagree.
import { posix, win32 } from 'node:path';
import { stringify as stringifyToml } from 'smol-toml';

export type McpOs = 'macos' | 'linux' | 'windows';
export type McpFormat = 'json' | 'jsonc' | 'toml';

export const MCP_SCOPES = ['user', 'project'] as const;
export const MCP_TRANSPORTS = ['stdio', 'http'] as const;
export type McpTransport = (typeof MCP_TRANSPORTS)[number];
/** The fields of a stdio entry, which a remote entry replaces (and the other way round). */
export const STDIO_FIELDS = ['type', 'command', 'args', 'env', 'source'] as const;
export const REMOTE_FIELDS = ['type', 'url', 'serverUrl', 'httpUrl', 'headers', 'bearer_token_env_var'] as const;
export type McpScope = (typeof MCP_SCOPES)[number];

/** The name of Paddock's entry in every client's server list. */
export const SERVER_NAME = 'paddock';
/** What the entry runs: `<paddock> mcp serve`, which reads the API key from the CLI config. */
export const SERVER_ARGS: readonly string[] = ['mcp', 'serve'];
/** The command when the paddock executable's absolute path is unknown (and in the API's snippets). */
export const DEFAULT_COMMAND = 'paddock';

/**
 * Where a path starts:
 * - home: the user's home (`~`; `%USERPROFILE%` on Windows);
 * - appData: Windows' roaming application data (`%APPDATA%`);
 * - xdgConfig: `$XDG_CONFIG_HOME`, default `~/.config` (Linux);
 * - project: the project folder (the current directory).
 */
export type PathBase = 'home' | 'appData' | 'xdgConfig' | 'project';

export interface PathSpec {
  base: PathBase;
  segments: readonly string[];
}

export interface ScopeSpec {
  paths: Record<McpOs, PathSpec>;
  /** An environment variable the client honours: when set, the file is these segments under it. */
  envDir?: { variable: string; segments: readonly string[] };
}

export interface McpTarget {
  name: string;
  /** The client's product name. */
  label: string;
  format: McpFormat;
  /** The path from the document's root to the object that maps server names to entries. */
  serversKey: readonly string[];
  /** Entry fields besides command and args that are always set (and put first). */
  fields?: Readonly<Record<string, unknown>>;
  /** Entry fields set only when the entry lacks them, so the user's own values win. */
  defaults?: Readonly<Record<string, unknown>>;
  scopes: { user: ScopeSpec; project?: ScopeSpec };
  /**
   * The entry for Paddock's remote server (/v1/mcp, Streamable HTTP), where the client takes one:
   * the API key is named by reference to PADDOCK_API_KEY in the client's environment, in the
   * client's own syntax, so no file ever holds it.
   */
  remote?: (url: string) => Record<string, unknown>;
  /** The client's documentation of this file. */
  docs: string;
}

const everywhere = (base: PathBase, ...segments: string[]): Record<McpOs, PathSpec> => ({
  macos: { base, segments },
  linux: { base, segments },
  windows: { base, segments },
});

/** Electron and similar apps: the per-user application-data folder of each OS. */
const appDataDir = (macosName: string, ...segments: string[]): Record<McpOs, PathSpec> => ({
  macos: { base: 'home', segments: ['Library', 'Application Support', macosName, ...segments] },
  linux: { base: 'xdgConfig', segments: [macosName, ...segments] },
  windows: { base: 'appData', segments: [macosName, ...segments] },
});

export const MCP_TARGETS = [
  {
    name: 'claude-desktop',
    label: 'Claude Desktop',
    format: 'json',
    serversKey: ['mcpServers'],
    scopes: { user: { paths: appDataDir('Claude', 'claude_desktop_config.json') } },
    docs: 'https://modelcontextprotocol.io/quickstart/user',
  },
  {
    name: 'claude-code',
    label: 'Claude Code',
    format: 'json',
    serversKey: ['mcpServers'],
    fields: { type: 'stdio' },
    scopes: {
      // User scope: the top-level mcpServers of ~/.claude.json (the file Claude Code keeps its state in).
      user: { paths: everywhere('home', '.claude.json'), envDir: { variable: 'CLAUDE_CONFIG_DIR', segments: ['.claude.json'] } },
      // Project scope: .mcp.json at the project root, meant to be checked in.
      project: { paths: everywhere('project', '.mcp.json') },
    },
    remote: (url) => ({ type: 'http', url, headers: { Authorization: 'Bearer ${PADDOCK_API_KEY}' } }),
    docs: 'https://docs.anthropic.com/en/docs/claude-code/mcp',
  },
  {
    name: 'cursor',
    label: 'Cursor',
    format: 'json',
    serversKey: ['mcpServers'],
    scopes: {
      user: { paths: everywhere('home', '.cursor', 'mcp.json') },
      project: { paths: everywhere('project', '.cursor', 'mcp.json') },
    },
    remote: (url) => ({ url, headers: { Authorization: 'Bearer ${env:PADDOCK_API_KEY}' } }),
    docs: 'https://docs.cursor.com/context/model-context-protocol',
  },
  {
    name: 'windsurf',
    label: 'Windsurf',
    format: 'json',
    serversKey: ['mcpServers'],
    scopes: { user: { paths: everywhere('home', '.codeium', 'windsurf', 'mcp_config.json') } },
    remote: (url) => ({ serverUrl: url, headers: { Authorization: 'Bearer ${env:PADDOCK_API_KEY}' } }),
    docs: 'https://docs.windsurf.com/windsurf/cascade/mcp',
  },
  {
    name: 'vscode',
    label: 'Visual Studio Code',
    format: 'jsonc',
    serversKey: ['servers'],
    fields: { type: 'stdio' },
    scopes: {
      // The user profile's mcp.json, beside settings.json ("MCP: Open User Configuration").
      user: { paths: appDataDir('Code', 'User', 'mcp.json') },
      project: { paths: everywhere('project', '.vscode', 'mcp.json') },
    },
    remote: (url) => ({ type: 'http', url, headers: { Authorization: 'Bearer ${env:PADDOCK_API_KEY}' } }),
    docs: 'https://code.visualstudio.com/docs/copilot/reference/mcp-configuration',
  },
  {
    name: 'codex',
    label: 'OpenAI Codex',
    format: 'toml',
    serversKey: ['mcp_servers'],
    scopes: {
      user: { paths: everywhere('home', '.codex', 'config.toml'), envDir: { variable: 'CODEX_HOME', segments: ['config.toml'] } },
      // Read only in projects the user has marked trusted.
      project: { paths: everywhere('project', '.codex', 'config.toml') },
    },
    remote: (url) => ({ url, bearer_token_env_var: 'PADDOCK_API_KEY' }),
    docs: 'https://developers.openai.com/codex/mcp',
  },
  {
    name: 'gemini',
    label: 'Gemini CLI',
    format: 'json',
    serversKey: ['mcpServers'],
    scopes: {
      user: { paths: everywhere('home', '.gemini', 'settings.json') },
      project: { paths: everywhere('project', '.gemini', 'settings.json') },
    },
    remote: (url) => ({ httpUrl: url, headers: { Authorization: 'Bearer $PADDOCK_API_KEY' } }),
    docs: 'https://geminicli.com/docs/tools/mcp-server/',
  },
  {
    name: 'zed',
    label: 'Zed',
    format: 'jsonc',
    serversKey: ['context_servers'],
    // "source": "custom" is the tag older Zed releases need, and newer ones accept; Zed wants args
    // (even empty) and documents an env object.
    fields: { source: 'custom' },
    defaults: { env: {} },
    scopes: {
      user: {
        paths: {
          macos: { base: 'home', segments: ['.config', 'zed', 'settings.json'] },
          linux: { base: 'xdgConfig', segments: ['zed', 'settings.json'] },
          windows: { base: 'appData', segments: ['Zed', 'settings.json'] },
        },
      },
    },
    docs: 'https://zed.dev/docs/ai/mcp',
  },
] as const satisfies readonly McpTarget[];

export type McpTargetName = (typeof MCP_TARGETS)[number]['name'];

export const MCP_TARGET_NAMES = MCP_TARGETS.map((t) => t.name) as [McpTargetName, ...McpTargetName[]];

export function findMcpTarget(name: string): McpTarget | undefined {
  return (MCP_TARGETS as readonly McpTarget[]).find((t) => t.name === name);
}

/** The scopes a target offers, user first. */
export function scopesOf(target: McpTarget): McpScope[] {
  return MCP_SCOPES.filter((s) => target.scopes[s] !== undefined);
}

// ---- paths ----

/** What a path is resolved against: injectable, so tests never touch the real home. */
export interface PlatformContext {
  /** process.platform: darwin, win32, linux… */
  platform: string;
  homedir: string;
  env: Record<string, string | undefined>;
  /** The project folder, for project scope. */
  cwd: string;
}

export function osOf(platform: string): McpOs {
  if (platform === 'darwin') return 'macos';
  if (platform === 'win32') return 'windows';
  return 'linux';
}

function scopeSpec(target: McpTarget, scope: McpScope): ScopeSpec {
  const spec = target.scopes[scope];
  if (!spec) throw new Error(`${target.name} has no ${scope} scope`);
  return spec;
}

/** The absolute path of the target's config file on this machine. */
export function resolveConfigPath(target: McpTarget, scope: McpScope, ctx: PlatformContext): string {
  const os = osOf(ctx.platform);
  const path = os === 'windows' ? win32 : posix;
  const spec = scopeSpec(target, scope);
  const env = (name: string) => {
    const value = ctx.env[name];
    return value && path.isAbsolute(value) ? value : undefined;
  };
  if (spec.envDir) {
    const dir = env(spec.envDir.variable);
    if (dir) return path.join(dir, ...spec.envDir.segments);
  }
  const { base, segments } = spec.paths[os];
  const home = (os === 'windows' ? env('USERPROFILE') : undefined) ?? ctx.homedir;
  let root: string;
  switch (base) {
    case 'home':
      root = home;
      break;
    case 'appData':
      root = env('APPDATA') ?? path.join(home, 'AppData', 'Roaming');
      break;
    case 'xdgConfig':
      root = env('XDG_CONFIG_HOME') ?? path.join(home, '.config');
      break;
    case 'project':
      root = path.resolve(ctx.cwd);
      break;
  }
  return path.join(root, ...segments);
}

/** Where the file lives on `os`, as a person would write it: `~/…`, `%APPDATA%\…`, `.vscode/mcp.json`. */
export function displayConfigPath(target: McpTarget, scope: McpScope, os: McpOs): string {
  const { base, segments } = scopeSpec(target, scope).paths[os];
  const sep = os === 'windows' ? '\\' : '/';
  const rest = segments.join(sep);
  switch (base) {
    case 'home':
      return os === 'windows' ? `%USERPROFILE%\\${rest}` : `~/${rest}`;
    case 'appData':
      return `%APPDATA%\\${rest}`;
    case 'xdgConfig':
      return `~/.config/${rest}`;
    case 'project':
      return rest;
  }
}

export function displayConfigPaths(target: McpTarget, scope: McpScope): Record<McpOs, string> {
  return {
    macos: displayConfigPath(target, scope, 'macos'),
    linux: displayConfigPath(target, scope, 'linux'),
    windows: displayConfigPath(target, scope, 'windows'),
  };
}

// ---- the entry ----

/** The fields of Paddock's entry that are always set, in the client's order. */
export function managedFields(target: McpTarget, command: string, launcher: readonly string[] = []): Record<string, unknown> {
  return { ...target.fields, command, args: [...launcher, ...SERVER_ARGS] };
}

/** Paddock's whole server entry for a new file: managed fields, then defaults. */
export function serverEntry(target: McpTarget, command: string = DEFAULT_COMMAND): Record<string, unknown> {
  return { ...managedFields(target, command), ...structuredClone(target.defaults ?? {}) };
}

/** A document holding only Paddock's entry, at the target's servers key. */
export function entryDocument(target: McpTarget, entry: Record<string, unknown>): Record<string, unknown> {
  let doc: Record<string, unknown> = { [SERVER_NAME]: entry };
  for (const key of [...target.serversKey].reverse()) doc = { [key]: doc };
  return doc;
}

/** The text to merge into the client's file: the entry under the target's servers key. */
export function configSnippet(target: McpTarget, command: string = DEFAULT_COMMAND, remoteUrl?: string): string {
  const entry = remoteUrl !== undefined && target.remote ? target.remote(remoteUrl) : serverEntry(target, command);
  const doc = entryDocument(target, entry);
  return target.format === 'toml' ? stringifyToml(doc) : `${JSON.stringify(doc, null, 2)}\n`;
}
