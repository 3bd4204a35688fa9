// Paddock's MCP tools: what a model uses to run sandboxes, commands and files through the API. The
// same server runs on stdio (`paddock mcp serve`) and over Streamable HTTP at the API's /v1/mcp.
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { z } from 'zod';
import { describeNetwork, PaddockApiError, PaddockError, type PaddockClient } from '../sdk/index.ts';
import type { CreateSandboxInput, CreatedPreview, ExecResult, FileView, Listing, NetworkPolicy, PreviewSummary, ProcessInfo, Sandbox } from '../sdk/types.ts';

export const MCP_SERVER_NAME = 'paddock';
const POLL_MS = 500;
/** The longest process_output may wait for its process (and so hold its call). */
export const PROCESS_OUTPUT_WAIT_MAX_SECONDS = 300;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface PaddockMcpOptions {
  /**
   * The API client, made afresh for each call from the CLI config, so a key set or changed with
   * `paddock config` is used without restarting the client app. Throws when not configured.
   */
  client: () => PaddockClient;
  version: string;
  /** Errors of the host's own (the CLI's configuration errors), as the model should read them. */
  describeError?: (err: unknown) => { code: string; message: string } | undefined;
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
the file_* tools on it, then sandbox_destroy when done. A sandbox is destroyed automatically at its session cap (30 minutes after creation by \
default) or sooner with sandbox_create's timeoutSeconds, and each one counts against the account's limit of concurrent sandboxes. When exactly one sandbox is active, tools use \
it if sandboxId is omitted; otherwise pass sandboxId (see sandbox_list). File paths are inside the sandbox; relative \
paths are relative to /workspace, the working directory. A server started in a sandbox (process_start) is reached from outside, a browser \
included, at the URL preview_create answers for its port. Work that must outlive a sandbox (its cap included) is kept with snapshot_create; \
sandbox_create with that snapshot starts a new sandbox from it.`;

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

// ---- structured results (outputSchema) ----

const SandboxOut = {
  id: z.string(),
  status: z.string(),
  image: z.string().optional(),
  createdAt: z.string().optional(),
  expiresAt: z.string().nullable().optional(),
};
/** A sandbox's egress, as the tools take it: flat, for a model to fill. */
const NetworkIn = {
  egress: z.enum(['none', 'all']).optional().describe("Where its programs may connect: none, or all (but loopback, private, metadata and the operator's own addresses). The operator's default when omitted."),
  allow: z
    .array(z.string().min(1).max(260))
    .min(1)
    .max(64)
    .optional()
    .describe('Instead of egress: the only places it may connect, each a domain (*.example.com for its subdomains), an IPv4 address or CIDR or an IPv6 one in brackets, with an optional :port (pypi.org:443, 203.0.113.0/24, 198.51.100.7:443).'),
};

function policyOf(args: { egress?: 'none' | 'all'; allow?: string[] }): NetworkPolicy | undefined {
  if (args.egress && args.allow) throw new ToolFailure('invalid_request', 'Give egress or allow, not both: allow lists the only places it may connect.');
  if (args.allow) return { egress: { allow: args.allow } };
  return args.egress ? { egress: args.egress } : undefined;
}

const sandboxOut = (s: Sandbox) => ({ id: s.id, status: s.status, image: s.image, createdAt: s.createdAt, expiresAt: s.expiresAt ?? null });
const ExecOut = {
  exitCode: z.number().nullable(),
  timedOut: z.boolean(),
  stdout: z.string(),
  stderr: z.string(),
  durationMs: z.number(),
};

// ---- results ----

function text(body: string): CallToolResult {
  return { content: [{ type: 'text', text: body }] };
}

/** Text for the model, and the same facts as structured content for clients that read it. */
function structured(body: string, content: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: body }], structuredContent: content };
}

function failure(code: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `Error [${code}]: ${message}` }] };
}

/** Anything a tool throws, as a tool error the model can read and act on: never a crash. */
export function toolError(err: unknown, describe?: PaddockMcpOptions['describeError']): CallToolResult {
  const own = describe?.(err);
  if (own) return failure(own.code, own.message);
  if (err instanceof PaddockApiError) {
    const retry = err.retryAfter !== undefined ? ` Retry after ${err.retryAfter} s.` : '';
    // The request id is what a report of a fault is traced by (the detail of a 5xx asks for it).
    const request = err.status >= 500 && err.requestId ? ` Request id: ${err.requestId}.` : '';
    return failure(err.code, `${err.detail} (HTTP ${err.status}).${retry}${request}`);
  }
  if (err instanceof ToolFailure) return failure(err.code, err.message);
  if (err instanceof PaddockError) return failure('connection_failed', err.message);
  return failure('internal_error', err instanceof Error ? err.message : String(err));
}

/** Wraps a tool so that whatever it throws reaches the model as a tool error. */
function guardWith(describe: PaddockMcpOptions['describeError']) {
  return <A>(fn: (args: A, extra: Extra) => Promise<CallToolResult>) =>
    async (args: A, extra: Extra): Promise<CallToolResult> => {
      try {
        return await fn(args, extra);
      } catch (err) {
        return toolError(err, describe);
      }
    };
}

// ---- formatting ----

function describeSandbox(s: Sandbox): string {
  const parts = [`${s.id}: ${s.status} (${s.state})`, `image ${s.image}`, `created ${s.createdAt}`];
  if (s.state === 'active') parts.push(`expires ${s.expiresAt}`);
  if (s.destroyedAt) parts.push(`destroyed ${s.destroyedAt}${s.destroyReason ? ` (${s.destroyReason})` : ''}`);
  if (s.failureMessage) parts.push(`failure: ${s.failureMessage}`);
  if (s.state === 'active') parts.push(`network ${describeNetwork(s.network)}`);
  if (s.snapshotOnDestroy) parts.push(s.finalSnapshotId ? `final snapshot ${s.finalSnapshotId}` : s.state === 'active' ? 'snapshotted when destroyed' : 'no final snapshot (it failed)');
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

function describeProcess(p: ProcessInfo): string {
  const how = p.status === 'running' ? 'running' : p.signal ? `ended by ${p.signal}` : `exited with code ${p.exitCode ?? 'unknown'}`;
  return `${p.id}: ${how}, started ${p.startedAt}${p.endedAt ? `, ended ${p.endedAt}` : ''}: ${p.command}`;
}

function describeCreatedPreview(p: CreatedPreview, id: string): string {
  if (p.public) return `Port ${p.port} of sandbox ${id} is public at ${p.url}: anyone with the address reaches it, no token needed.`;
  return [
    `Port ${p.port} of sandbox ${id} is previewed at ${p.url} (private: a token is needed).`,
    `For a browser, give the signed URL (it lets that browser in until ${p.expiresAt}): ${p.signedUrl}`,
    `Programs send the token as a header instead: X-Paddock-Preview-Token: ${p.token}`,
  ].join('\n');
}

function describePreview(p: PreviewSummary): string {
  return `port ${p.port}: ${p.url} (${p.public ? 'public' : `private; last token expires ${p.expiresAt}`})`;
}

/** The last `max` characters of a stream, saying so when more was kept. */
function tailOf(name: string, out: string, max: number): string {
  if (out === '') return `${name}: (empty)`;
  const cut = out.length > max;
  const shown = cut ? out.slice(-max) : out;
  return `${name}:${cut ? ` (last ${max} characters)` : ''}\n${shown.endsWith('\n') ? shown.slice(0, -1) : shown}`;
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
  const guard = guardWith(options.describeError);

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
        'at the session cap (30 minutes after creation by default), or sooner with timeoutSeconds, and counts against the ' +
        'account\'s concurrent-sandbox limit until then, so destroy it with sandbox_destroy when finished.',
      inputSchema: {
        image: z.string().min(1).max(255).optional().describe("Container image; the operator's default when omitted."),
        env: stringMap.optional().describe('Environment variables every command in the sandbox starts with.'),
        metadata: stringMap.optional().describe('Labels to attach to the sandbox (string to string).'),
        timeoutSeconds: z.int().min(1).optional().describe('Destroy it this many seconds after creation; at most the session cap, which is the default.'),
        idempotencyKey: z
          .string()
          .min(1)
          .max(255)
          .optional()
          .describe('Any unique text: a retried call with the same key answers the first sandbox instead of making a second.'),
        snapshot: z.string().min(1).max(100).optional().describe("A ready snapshot (snap_…, see snapshot_create): the sandbox's /workspace starts as it was."),
        snapshotOnDestroy: z
          .boolean()
          .optional()
          .describe("Keep the sandbox's /workspace as a snapshot when it is destroyed (by sandbox_destroy or at its cap): sandbox_get names it then."),
        ...NetworkIn,
      },
      outputSchema: SandboxOut,
      annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const input = {
        image: args.image,
        env: args.env,
        metadata: args.metadata,
        timeoutSeconds: args.timeoutSeconds,
        idempotencyKey: args.idempotencyKey,
        snapshot: args.snapshot,
        ...(args.snapshotOnDestroy ? { snapshotOnDestroy: true } : {}),
        network: policyOf(args),
      };
      const s = await createSandbox(client(), input, extra);
      if (s.status === 'failed') throw new ToolFailure('sandbox_failed', `Sandbox ${s.id} failed to start: ${s.failureMessage ?? 'no reason given'}.`);
      return structured(`Created sandbox ${s.id}.\n${describeSandbox(s)}`, sandboxOut(s));
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
    'sandbox_get',
    {
      title: 'One sandbox',
      description: "One sandbox's status (pending, running, failed, terminating, destroyed) and when it expires.",
      inputSchema: { sandboxId },
      outputSchema: SandboxOut,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const s = await client().getSandbox(await target(args.sandboxId, extra.signal), { signal: extra.signal });
      return structured(describeSandbox(s), sandboxOut(s));
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
    'sandbox_network',
    {
      title: "Set a sandbox's network",
      description:
        "Changes where a running sandbox's programs may connect: egress none (nowhere), all (anywhere but loopback, private, " +
        'metadata and the operator\'s own addresses), or allow, a list of domains (*.example.com for its subdomains), addresses or CIDRs, each with an optional :port. ' +
        'Connections it opens from then on follow it. Anything but the operator\'s default needs a key with network:write.',
      inputSchema: { sandboxId, ...NetworkIn },
      outputSchema: SandboxOut,
      annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const policy = policyOf(args);
      if (!policy) throw new ToolFailure('invalid_request', 'Say where it may connect: egress none or all, or allow a list.');
      const s = await client().setSandboxNetwork(await target(args.sandboxId, extra.signal), policy, { signal: extra.signal });
      return structured(`Sandbox ${s.id} egress: ${describeNetwork(s.network)}.`, sandboxOut(s));
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
      outputSchema: ExecOut,
      annotations: { destructiveHint: true, openWorldHint: true },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const input = { command: args.command, cwd: args.cwd, env: args.env, stdin: args.stdin, timeoutSeconds: args.timeoutSeconds };
      const r = await runExec(client(), id, input, extra);
      const result = structured(formatExec(r), { exitCode: r.exitCode, timedOut: r.timedOut, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs });
      // A command that ran out of time did not finish its work: the model must not read it as done.
      return r.timedOut ? { ...result, isError: true } : result;
    }),
  );

  server.registerTool(
    'file_upload',
    {
      title: 'Upload a binary file',
      description: 'Writes a file of any bytes, given as base64, in a sandbox, creating its parent directories (for text, file_create is simpler).',
      inputSchema: {
        path: filePath('The file to write.'),
        contentBase64: z.string().max(16 * 1024 * 1024).describe('The whole content, base64.'),
        sandboxId,
        overwrite: z.boolean().optional().describe('false: fail if the file exists. Default true.'),
      },
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const written = await client().createFile(id, { path: args.path, contentBase64: args.contentBase64, overwrite: args.overwrite }, { signal: extra.signal });
      return text(`Wrote ${written.path} (${written.size} bytes).`);
    }),
  );

  server.registerTool(
    'file_download',
    {
      title: 'Download a binary file',
      description: 'Reads a file of any bytes from a sandbox, answered as base64 (for text, file_view reads it as text). Up to 8 MiB.',
      inputSchema: { path: filePath('The file to read.'), sandboxId },
      outputSchema: { path: z.string(), size: z.number(), contentBase64: z.string() },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      // base64 inside the sandbox: its own view of the path, its user's rights.
      const r = await client().exec(id, { command: ['sh', '-c', 'test -f "$1" && test "$(wc -c < "$1")" -le 8388608 && base64 -w0 -- "$1"', 'sh', args.path] }, { signal: extra.signal });
      if (r.exitCode !== 0) throw new ToolFailure('file_not_readable', `${args.path} is not a regular file of at most 8 MiB that the sandbox user can read.`);
      const size = Buffer.from(r.stdout, 'base64').length;
      return structured(`${args.path}: ${size} bytes, base64 in structuredContent.contentBase64:\n${r.stdout}`, { path: args.path, size, contentBase64: r.stdout });
    }),
  );

  server.registerTool(
    'file_delete',
    {
      title: 'Delete a file or folder',
      description: 'Deletes a file, a symlink (not what it points at), or a folder and everything in it, in a sandbox. Deleting what does not exist is not an error.',
      inputSchema: { path: filePath('The file or folder.'), sandboxId },
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      try {
        await client().removePath(id, args.path, { recursive: true, signal: extra.signal });
      } catch (err) {
        if (!(err instanceof PaddockApiError && err.code === 'file_not_found')) throw err;
        return text(`${args.path} does not exist: nothing to delete.`);
      }
      return text(`Deleted ${args.path}.`);
    }),
  );

  server.registerTool(
    'file_move',
    {
      title: 'Move or rename a file or folder',
      description:
        'Moves (renames) a file or folder in a sandbox to exactly the name given as `to` (not into a folder of that name), creating its parent folders. ' +
        'Something already at `to` is an error unless overwrite is true.',
      inputSchema: {
        from: filePath('What to move.'),
        to: filePath('Its new name.'),
        sandboxId,
        overwrite: z.boolean().optional().describe('true: replace a file (or an empty folder) already at `to`. Default false.'),
      },
      annotations: { destructiveHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const moved = await client().movePath(id, { from: args.from, to: args.to, overwrite: args.overwrite ?? false }, { signal: extra.signal });
      return text(`Moved ${args.from} to ${moved.path}.`);
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

  server.registerTool(
    'process_start',
    {
      title: 'Start a background process',
      description:
        'Starts a shell command (/bin/sh -c) in a sandbox as a background process (a server, a watcher, a long build) and ' +
        'answers at once with its id (proc_…); it runs until it ends, is stopped with process_stop, or the sandbox goes. ' +
        'Read its output with process_output; the last part of its output is kept.',
      inputSchema: {
        command: z.string().min(1).max(65_536).describe('The command line, run by /bin/sh -c, e.g. "python3 -m http.server 8000".'),
        sandboxId,
        cwd: z.string().min(1).max(4096).optional().describe('Working directory; default /workspace.'),
        env: stringMap.optional().describe('Extra environment variables for this process.'),
      },
      outputSchema: { id: z.string(), command: z.string(), startedAt: z.string() },
      annotations: { destructiveHint: true, openWorldHint: true },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const p = await client().startProcess(id, { command: args.command, cwd: args.cwd, env: args.env }, { signal: extra.signal });
      return structured(`Started background process ${p.id} in sandbox ${id}.`, { id: p.id, command: p.command, startedAt: p.startedAt });
    }),
  );

  server.registerTool(
    'process_list',
    {
      title: 'List background processes',
      description: "A sandbox's background processes: the running ones and the most recent ones that ended, with their exit codes.",
      inputSchema: { sandboxId },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const list = await client().listProcesses(await target(args.sandboxId, extra.signal), { signal: extra.signal });
      return text(list.length ? list.map(describeProcess).join('\n') : 'No background processes.');
    }),
  );

  server.registerTool(
    'process_output',
    {
      title: 'Read a background process\'s output',
      description:
        "A background process's kept output (stdout and stderr apart), and whether it has ended and how. " +
        'With waitSeconds, waits up to that long for it to end first (output read meanwhile is included).',
      inputSchema: {
        processId: z.string().min(1).max(100).describe('The process (proc_…), from process_start or process_list.'),
        sandboxId,
        waitSeconds: z.number().min(0).max(PROCESS_OUTPUT_WAIT_MAX_SECONDS).optional().describe('Wait up to this long for the process to end; default 0 (read now).'),
        maxChars: z.number().int().min(100).max(1_000_000).optional().describe('Characters of each stream shown, the last ones; default 20000.'),
      },
      outputSchema: { stdout: z.string(), stderr: z.string(), running: z.boolean(), exitCode: z.number().nullable(), signal: z.string().nullable() },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const wait = args.waitSeconds ?? 0;
      // Following until the deadline: the request is given up then, and the process runs on.
      const signal = wait > 0 ? AbortSignal.any([extra.signal, AbortSignal.timeout(wait * 1000)]) : extra.signal;
      let stdout = '';
      let stderr = '';
      let exit: { exitCode: number | null; signal: string | null } | undefined;
      const read = async (follow: boolean, until: AbortSignal) => {
        [stdout, stderr] = ['', ''];
        for await (const e of client().processOutput(id, args.processId, { follow, signal: until })) {
          if (e.type === 'stdout') stdout += e.data;
          else if (e.type === 'stderr') stderr += e.data;
          else if (e.type === 'exit') exit = e;
          else throw new ToolFailure(e.code, e.detail);
        }
      };
      try {
        await read(wait > 0, signal);
      } catch (err) {
        if (!(wait > 0 && signal.aborted && !extra.signal.aborted)) throw err;
        // Still running at the deadline: answer all it printed, read whole now (the follow may
        // have been cut before its first bytes arrived).
        await read(false, extra.signal);
      }
      const max = args.maxChars ?? 20_000;
      const how = exit ? (exit.signal ? `ended by ${exit.signal}` : `exited with code ${exit.exitCode ?? 'unknown'}`) : 'still running';
      return structured(`${args.processId}: ${how}\n${tailOf('stdout', stdout, max)}\n${tailOf('stderr', stderr, max)}`, {
        stdout: stdout.slice(-max),
        stderr: stderr.slice(-max),
        running: !exit,
        exitCode: exit?.exitCode ?? null,
        signal: exit?.signal ?? null,
      });
    }),
  );

  server.registerTool(
    'process_stop',
    {
      title: 'Stop a background process',
      description: 'Stops a background process and what it started in its process group: TERM (default, lets it clean up) or KILL. Stopping one that has ended is not an error.',
      inputSchema: {
        processId: z.string().min(1).max(100).describe('The process (proc_…).'),
        sandboxId,
        signal: z.enum(['TERM', 'KILL']).optional().describe('TERM (default) or KILL.'),
      },
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const c = client();
      await c.stopProcess(id, args.processId, args.signal ?? 'TERM', { signal: extra.signal });
      const p = (await c.listProcesses(id, { signal: extra.signal })).find((x) => x.id === args.processId);
      return text(`Sent SIG${args.signal ?? 'TERM'} to ${args.processId}.${p ? `\n${describeProcess(p)}` : ''}`);
    }),
  );

  server.registerTool(
    'preview_create',
    {
      title: 'Expose a port',
      description:
        'Makes a port a program in the sandbox listens on (a web server, an API) reachable at a URL of its own, and answers the URL. ' +
        'A preview is private unless public is true: a private one answers its signed URL, for a browser, and a token, which programs ' +
        'send as the X-Paddock-Preview-Token header. Calling it again for the same port makes a new token (and changes public when given). ' +
        'It lasts until preview_delete or the sandbox ends.',
      inputSchema: {
        port: z.int().min(1).max(65_535).describe('The TCP port the program listens on, on loopback or every address (e.g. 8000).'),
        sandboxId,
        public: z.boolean().optional().describe('true: anyone with the URL reaches it, no token needed. A new preview is private; an existing one keeps its setting unless given.'),
        expiresInSeconds: z.int().min(60).max(7 * 24 * 3600).optional().describe("The new token's lifetime; default 3600 (an hour), at most a week."),
      },
      outputSchema: {
        port: z.number(),
        url: z.string(),
        public: z.boolean(),
        signedUrl: z.string().optional(),
        token: z.string().optional(),
        expiresAt: z.string(),
      },
      annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const input = { port: args.port, public: args.public, expiresInSeconds: args.expiresInSeconds };
      const p = await client().createPreview(id, input, { signal: extra.signal });
      // A public preview needs no token: none is handed out to be copied around.
      const secret = p.public ? {} : { signedUrl: p.signedUrl, token: p.token };
      return structured(describeCreatedPreview(p, id), { port: p.port, url: p.url, public: p.public, ...secret, expiresAt: p.expiresAt });
    }),
  );

  server.registerTool(
    'preview_list',
    {
      title: 'List previews',
      description: "A sandbox's exposed ports and their URLs (never a token: preview_create makes a new one).",
      inputSchema: { sandboxId },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const list = await client().listPreviews(await target(args.sandboxId, extra.signal), { signal: extra.signal });
      return text(list.length ? list.map(describePreview).join('\n') : 'No previews.');
    }),
  );

  server.registerTool(
    'preview_delete',
    {
      title: 'Stop exposing a port',
      description: "Removes a port's preview: its URL stops answering, every token of it stops at once, and connections open through it are closed.",
      inputSchema: {
        port: z.int().min(1).max(65_535).describe('The previewed port.'),
        sandboxId,
      },
      annotations: { destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      await client().deletePreview(id, args.port, { signal: extra.signal });
      return text(`Removed the preview of port ${args.port} of sandbox ${id}.`);
    }),
  );

  server.registerTool(
    'snapshot_create',
    {
      title: "Snapshot a sandbox's workspace",
      description:
        "Copies the sandbox's /workspace (files, modes, links) into a snapshot that outlives the sandbox, and answers its id once the copy is whole. " +
        'sandbox_create with snapshot set to that id starts a new sandbox whose /workspace is the copy, as often as wanted: to continue past the session cap, or to try several things from one state.',
      inputSchema: {
        sandboxId,
        name: z.string().min(1).max(200).optional().describe('A name of your own for it.'),
      },
      outputSchema: { id: z.string(), name: z.string().nullable(), sandboxId: z.string(), status: z.string(), sizeBytes: z.number(), files: z.number(), expiresAt: z.string() },
      annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    guard(async (args, extra) => {
      const id = await target(args.sandboxId, extra.signal);
      const s = await client().createSnapshot(id, args.name === undefined ? {} : { name: args.name }, { signal: extra.signal });
      return structured(`Snapshot ${s.id} of sandbox ${id}: ${s.files} files, ${s.sizeBytes} bytes stored, kept until ${s.expiresAt}.`, {
        id: s.id,
        name: s.name,
        sandboxId: s.sandboxId,
        status: s.status,
        sizeBytes: s.sizeBytes,
        files: s.files,
        expiresAt: s.expiresAt,
      });
    }),
  );

  server.registerTool(
    'snapshot_list',
    {
      title: 'List snapshots',
      description: "The account's snapshots, newest first: id, name, status, the sandbox taken from, size.",
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async (_args, extra) => {
      const lines: string[] = [];
      for await (const s of client().snapshots({ signal: extra.signal })) {
        lines.push(`${s.id}${s.name ? ` (${s.name})` : ''}: ${s.status}${s.failureCode ? ` (${s.failureCode})` : ''}, from ${s.sandboxId}, ${s.sizeBytes} bytes, kept until ${s.expiresAt}`);
      }
      return text(lines.length ? lines.join('\n') : 'No snapshots.');
    }),
  );

  server.registerTool(
    'snapshot_delete',
    {
      title: 'Delete a snapshot',
      description: 'Deletes a snapshot; sandboxes started from it keep their workspaces.',
      inputSchema: { snapshotId: z.string().min(1).max(100).describe('The snapshot (snap_…).') },
      annotations: { destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    guard(async (args, extra) => {
      await client().deleteSnapshot(args.snapshotId, { signal: extra.signal });
      return text(`Deleted snapshot ${args.snapshotId}.`);
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
