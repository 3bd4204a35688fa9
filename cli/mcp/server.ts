// Paddock's MCP server: the tools a model uses to run sandboxes, commands and files through the API.
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { z } from 'zod';
import { PaddockApiError, PaddockError, type PaddockClient } from '../api/index.ts';
import type { CreateSandboxInput, ExecResult, FileView, Listing, Sandbox } from '../api/types.ts';
import { CliError } from '../errors.ts';

export const MCP_SERVER_NAME = 'paddock';
const POLL_MS = 500;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface PaddockMcpOptions {
  /**
   * The API client, made afresh for each call from the CLI config, so a key set or changed with
   * `paddock config` is used without restarting the client app. Throws when not configured.
   */
  client: () => PaddockClient;
  version: string;
}

/** A tool failure the model is told about: selection problems, configuration, local checks. */
export class ToolFailure extends Error {
  override name = 'ToolFailure';
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

const INSTRUCTIONS = `Paddock runs isolated, short-lived Linux sandboxes. Typical use: sandbox_create, then exec and \
the file_* tools on it, then sandbox_destroy when done. A sandbox is destroyed automatically 30 minutes after creation \
and each one counts against the account's limit of concurrent sandboxes. When exactly one sandbox is active, tools use \
it if sandboxId is omitted; otherwise pass sandboxId (see sandbox_list). File paths are inside the sandbox; relative \
paths are relative to /workspace, the working directory.`;

// ---- shared input fields ----

const sandboxId = z
  .string()
  .min(1)
  .max(100)
  .optional()
  .describe('The sandbox (sbx_…). Optional when exactly one sandbox is active: that one is used.');
const filePath = (what: string) => z.string().min(1).max(4096).describe(`${what} Relative paths are relative to /workspace.`);
const dirPath = z.string().min(1).max(4096).optional().describe('A directory in the sandbox; default /workspace.');
const stringMap = z.record(z.string(), z.string());

// ---- results ----

function text(body: string): CallToolResult {
  return { content: [{ type: 'text', text: body }] };
}

function failure(code: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `Error [${code}]: ${message}` }] };
}

/** Anything a tool throws, as a tool error the model can read and act on: never a crash. */
export function toolError(err: unknown): CallToolResult {
  if (err instanceof PaddockApiError) {
    const retry = err.retryAfter !== undefined ? ` Retry after ${err.retryAfter} s.` : '';
    return failure(err.code, `${err.detail} (HTTP ${err.status}).${retry}`);
  }
  if (err instanceof ToolFailure) return failure(err.code, err.message);
  if (err instanceof CliError) return failure(err.code ?? 'not_configured', err.hint ? `${err.message} ${err.hint}` : err.message);
  if (err instanceof PaddockError) return failure('connection_failed', err.message);
  return failure('internal_error', err instanceof Error ? err.message : String(err));
}

function guard<A>(fn: (args: A, extra: Extra) => Promise<CallToolResult>) {
  return async (args: A, extra: Extra): Promise<CallToolResult> => {
    try {
      return await fn(args, extra);
    } catch (err) {
      return toolError(err);
    }
  };
}

// ---- formatting ----

function describeSandbox(s: Sandbox): string {
  const parts = [`${s.id}: ${s.status} (${s.state})`, `image ${s.image}`, `created ${s.createdAt}`];
  if (s.state === 'active') parts.push(`expires ${s.expiresAt}`);
  if (s.destroyedAt) parts.push(`destroyed ${s.destroyedAt}${s.destroyReason ? ` (${s.destroyReason})` : ''}`);
  if (s.failureMessage) parts.push(`failure: ${s.failureMessage}`);
  return parts.join(', ');
}

function formatExec(r: ExecResult): string {
  const how = r.timedOut
    ? `timed out after ${r.durationMs} ms`
    : r.exitCode === null
      ? `killed by ${r.signal ?? 'a signal'} after ${r.durationMs} ms`
      : `exit code ${r.exitCode} (${r.durationMs} ms)`;
  const block = (name: string, out: string, truncated: boolean) =>
    out === '' ? `${name}: (empty)` : `${name}:${truncated ? ' (truncated)' : ''}\n${out.endsWith('\n') ? out.slice(0, -1) : out}`;
  return [how, block('stdout', r.stdout, r.stdoutTruncated), block('stderr', r.stderr, r.stderrTruncated)].join('\n');
}

function formatView(v: FileView): string {
  if (v.encoding === 'base64') {
    return `${v.path}: not UTF-8 text (${v.size} bytes); its bytes as base64:\n${v.contentBase64 ?? ''}`;
  }
  if (v.totalLines === 0) return `${v.path}: empty file`;
  let head = `${v.path}: lines ${v.startLine}-${v.endLine} of ${v.totalLines}`;
  if (v.truncated) head += ` (more follow: view again with startLine ${v.endLine + 1})`;
  return `${head}\n${v.content ?? ''}`;
}

function formatListing(l: Listing): string {
  if (l.entries.length === 0) return `${l.path}: empty directory`;
  const lines = l.entries.map((e) => {
    if (e.type === 'dir') return `${e.name}/`;
    if (e.type === 'file') return `${e.name}  (${e.size} bytes)`;
    return `${e.name}  (${e.type})`;
  });
  return `${l.path}:\n${lines.join('\n')}${l.truncated ? '\n(truncated: more entries exist)' : ''}`;
}

// ---- the server ----

export function createPaddockMcpServer(options: PaddockMcpOptions): McpServer {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: options.version }, { instructions: INSTRUCTIONS });
  const client = options.client;

  /** The sandbox a call targets: the one given, else the only active one (as the CLI does). */
  async function target(id: string | undefined, signal: AbortSignal): Promise<string> {
    if (id) return id;
    const active = await client().listSandboxes('active', { signal });
    if (active.length === 1) return active[0]!.id;
    if (active.length === 0) {
      throw new ToolFailure('no_active_sandbox', 'No sandbox is active: create one with sandbox_create, or pass sandboxId.');
    }
    const ids = active.map((s) => s.id).join(', ');
    throw new ToolFailure('sandbox_ambiguous', `${active.length} sandboxes are active (${ids}): pass sandboxId to choose one.`);
  }

  server.registerTool(
    'sandbox_create',
    {
      title: 'Create a sandbox',
      description:
        'Creates a new isolated Linux sandbox and waits until it is running; answers its id. It is destroyed automatically ' +
        '30 minutes after creation, and counts against the account\'s concurrent-sandbox limit until then, so destroy it ' +
        'with sandbox_destroy when finished.',
      inputSchema: {
        image: z.string().min(1).max(255).optional().describe("Container image; the operator's default when omitted."),
        env: stringMap.optional().describe('Environment variables every command in the sandbox starts with.'),
        metadata: stringMap.optional().describe('Labels to attach to the sandbox (string to string).'),
      },
      annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const s = await createSandbox(client(), { image: args.image, env: args.env, metadata: args.metadata }, extra);
      if (s.status === 'failed') throw new ToolFailure('sandbox_failed', `Sandbox ${s.id} failed to start: ${s.failureMessage ?? 'no reason given'}.`);
      return text(`Created sandbox ${s.id}.\n${describeSandbox(s)}`);
    }),
  );

  server.registerTool(
    'sandbox_list',
    {
      title: 'List sandboxes',
      description: "Lists the account's sandboxes, newest first: active ones by default.",
      inputSchema: {
        state: z.enum(['active', 'destroyed', 'all']).optional().describe('Which sandboxes: active (default), destroyed or all.'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const state = args.state ?? 'active';
      const list = await client().listSandboxes(state, { signal: extra.signal });
      if (list.length === 0) return text(state === 'active' ? 'No active sandboxes.' : `No ${state === 'all' ? '' : `${state} `}sandboxes.`);
      return text(list.map(describeSandbox).join('\n'));
    }),
  );

  server.registerTool(
    'sandbox_destroy',
    {
      title: 'Destroy a sandbox',
      description: 'Destroys a sandbox and everything in it, and waits until it is gone. Destroying one already destroyed is not an error.',
      inputSchema: { sandboxId },
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const s = await client().destroySandbox(id, { signal: extra.signal });
      return text(`Destroyed sandbox ${s.id}.\n${describeSandbox(s)}`);
    }),
  );

  server.registerTool(
    'exec',
    {
      title: 'Run a command',
      description:
        'Runs a shell command (/bin/sh -c) in a sandbox and answers when it ends, with its exit code, stdout and stderr ' +
        '(kept apart). A non-zero exit code is reported, not treated as a tool error. Commands start in /workspace.',
      inputSchema: {
        command: z.string().min(1).max(65_536).describe('The command line, run by /bin/sh -c, e.g. "ls -la" or "python3 main.py".'),
        sandboxId,
        cwd: z.string().min(1).max(4096).optional().describe('Working directory; default /workspace.'),
        env: stringMap.optional().describe('Extra environment variables for this command.'),
        stdin: z.string().optional().describe('Text sent to the command as standard input.'),
        timeoutSeconds: z.number().positive().optional().describe('Kill the command after this many seconds; default 60.'),
      },
      annotations: { destructiveHint: true, openWorldHint: true },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const input = { command: args.command, cwd: args.cwd, env: args.env, stdin: args.stdin, timeoutSeconds: args.timeoutSeconds };
      return text(formatExec(await runExec(client(), id, input, extra)));
    }),
  );

  server.registerTool(
    'file_view',
    {
      title: 'View a file',
      description: 'Reads a text file in a sandbox, whole or a range of lines (1-based, inclusive). Long files come back in parts: the answer says where to continue.',
      inputSchema: {
        path: filePath('The file.'),
        sandboxId,
        startLine: z.number().int().min(1).optional().describe('First line to read (1-based); default 1.'),
        endLine: z.number().int().min(1).optional().describe('Last line to read (inclusive); default the last.'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const view = await client().viewFile(id, { path: args.path, startLine: args.startLine, endLine: args.endLine }, { signal: extra.signal });
      return text(formatView(view));
    }),
  );

  server.registerTool(
    'file_create',
    {
      title: 'Create a file',
      description: 'Writes a text file (UTF-8) in a sandbox, creating its parent directories; replaces an existing file unless overwrite is false.',
      inputSchema: {
        path: filePath('The file to write.'),
        content: z.string().describe('The whole content of the file.'),
        sandboxId,
        overwrite: z.boolean().optional().describe('false: fail if the file exists. Default true.'),
      },
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const written = await client().createFile(id, { path: args.path, content: args.content, overwrite: args.overwrite }, { signal: extra.signal });
      return text(`${written.overwritten ? 'Replaced' : 'Created'} ${written.path} (${written.size} bytes).`);
    }),
  );

  server.registerTool(
    'file_edit',
    {
      title: 'Edit a file',
      description:
        'Replaces exact text in a file in a sandbox. oldText must occur exactly once (include surrounding lines to make ' +
        'it unique), or set replaceAll to replace every occurrence. Whitespace and line breaks must match exactly.',
      inputSchema: {
        path: filePath('The file to edit.'),
        oldText: z.string().min(1).describe('The exact text to replace.'),
        newText: z.string().describe('The text to put in its place (may be empty).'),
        sandboxId,
        replaceAll: z.boolean().optional().describe('Replace every occurrence instead of requiring exactly one. Default false.'),
      },
      annotations: { destructiveHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const input = { path: args.path, oldText: args.oldText, newText: args.newText, replaceAll: args.replaceAll };
      const r = await client().editFile(id, input, { signal: extra.signal });
      return text(`Replaced ${r.replacements} occurrence${r.replacements === 1 ? '' : 's'} in ${r.path}.`);
    }),
  );

  server.registerTool(
    'file_list',
    {
      title: 'List a directory',
      description: 'Lists the entries of a directory in a sandbox (directories end in /).',
      inputSchema: { path: dirPath, sandboxId },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      return text(formatListing(await client().listDir(id, args.path, { signal: extra.signal })));
    }),
  );

  server.registerTool(
    'file_glob',
    {
      title: 'Find files by name',
      description: 'Finds files in a sandbox whose path matches a glob: *, ?, [...], {a,b}, and ** across directories (e.g. "**/*.py"). Answers absolute paths, sorted.',
      inputSchema: {
        pattern: z.string().min(1).max(4096).describe('The glob, relative to path (or absolute).'),
        path: dirPath,
        sandboxId,
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const r = await client().glob(id, { pattern: args.pattern, path: args.path }, { signal: extra.signal });
      if (r.matches.length === 0) return text(`No files match ${r.pattern}.`);
      return text(r.matches.join('\n') + (r.truncated ? '\n(truncated: more files match)' : ''));
    }),
  );

  server.registerTool(
    'file_grep',
    {
      title: 'Search file contents',
      description: 'Searches files in a sandbox for lines matching a regular expression (POSIX extended, as grep -E), recursively. Answers path:line: text.',
      inputSchema: {
        pattern: z.string().min(1).max(4096).describe('The regular expression.'),
        path: z.string().min(1).max(4096).optional().describe('A directory to search recursively, or one file; default /workspace.'),
        glob: z.string().min(1).max(4096).optional().describe('Only search files whose path relative to path matches this glob: "**/*.ts" at any depth, "*.ts" directly in path.'),
        ignoreCase: z.boolean().optional().describe('Match case-insensitively. Default false.'),
        sandboxId,
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const input = { pattern: args.pattern, path: args.path, glob: args.glob, ignoreCase: args.ignoreCase };
      const r = await client().grep(id, input, { signal: extra.signal });
      if (r.matches.length === 0) return text(`No lines match ${r.pattern}.`);
      const lines = r.matches.map((m) => `${m.path}:${m.line}: ${m.text}`);
      return text(lines.join('\n') + (r.truncated ? '\n(truncated: more lines match)' : ''));
    }),
  );

  return server;
}

async function progress(extra: Extra, progressToken: string | number, value: number, message: string): Promise<void> {
  await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: value, message } }).catch(() => undefined);
}

/**
 * Creates a sandbox and waits until it is running (or failed). When the caller asked for progress,
 * it polls and reports each status, which also keeps a slow start from timing the request out.
 */
async function createSandbox(client: PaddockClient, input: CreateSandboxInput, extra: Extra): Promise<Sandbox> {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return client.createSandbox(input, { signal: extra.signal });
  let sandbox = await client.createSandbox({ ...input, wait: false }, { signal: extra.signal });
  for (let n = 1; sandbox.status === 'pending'; n++) {
    await progress(extra, progressToken, n, `sandbox ${sandbox.id} is starting`);
    await sleep(POLL_MS, undefined, { signal: extra.signal });
    sandbox = await client.getSandbox(sandbox.id, { signal: extra.signal });
  }
  return sandbox;
}

/**
 * Runs the command. When the caller asked for progress (a progress token), the output is streamed
 * and each chunk is sent as a progress notification, which also keeps the request from timing out.
 */
async function runExec(client: PaddockClient, id: string, input: Parameters<PaddockClient['exec']>[1], extra: Extra): Promise<ExecResult> {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return client.exec(id, input, { signal: extra.signal });
  let stdout = '';
  let stderr = '';
  let received = 0;
  for await (const event of client.execStream(id, input, { signal: extra.signal })) {
    if (event.type === 'exit') {
      const { type: _, ...exit } = event;
      return { ...exit, stdout, stderr };
    }
    if (event.type === 'error') throw new ToolFailure(event.code, event.detail);
    if (event.type === 'stdout') stdout += event.data;
    else stderr += event.data;
    received += event.data.length;
    await progress(extra, progressToken, received, event.data.slice(-500));
  }
  throw new ToolFailure('connection_failed', 'The exec stream ended before the command did.');
}
