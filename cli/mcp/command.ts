import { homedir } from 'node:os';
import { Option, type Command } from 'commander';
import { MCP_SCOPES, MCP_TARGETS, MCP_TRANSPORTS, type McpScope, type McpTransport } from '../../shared/mcp/targets.ts';
import { resolveConfig } from '../config/resolve.ts';
import { printResult, say } from '../output/print.ts';
import { mcpInit, type McpInitResult } from './init.ts';
import { resolvePaddockCommand, selfCommand } from './paddock-command.ts';

interface InitFlags {
  scope?: McpScope;
  print?: boolean;
  command?: string;
  transport?: McpTransport;
  json?: boolean;
}

/** The remote server's address, from the CLI's configured base URL (none when unconfigured). */
function remoteUrl(): string | undefined {
  try {
    const { baseUrl } = resolveConfig(process.env);
    return baseUrl ? `${baseUrl.replace(/\/+$/, '')}/v1/mcp` : undefined;
  } catch {
    return undefined;
  }
}

const TARGET_HELP = MCP_TARGETS.map((t) => `${t.name} (${t.label})`).join(', ');

/** `paddock mcp serve` and `paddock mcp init <target>`. */
export function registerMcpCommands(program: Command): void {
  const mcp = program.command('mcp').description('the MCP tool server that lets AI apps (Claude, Cursor, VS Code…) use Paddock');

  mcp
    .command('serve')
    .description('run the MCP server on stdin/stdout (AI apps start this themselves; it uses the API key from `paddock config`)')
    .action(async () => {
      // The MCP SDK and its schemas are most of the CLI's code: only `mcp serve` loads them.
      const { serveMcp } = await import('./serve.ts');
      await serveMcp();
    });

  mcp
    .command('init')
    .description("add the paddock MCP server to an AI app's own config file (other servers and comments are kept, a backup is made)")
    .argument('<target>', `the app: ${TARGET_HELP}`)
    .addOption(new Option('--scope <scope>', 'user: for every project (default); project: the config file in this folder').choices(MCP_SCOPES))
    .addOption(
      new Option('--transport <transport>', 'stdio: the app runs paddock (default); http: it connects to the API\'s /v1/mcp, with the key from its PADDOCK_API_KEY').choices(
        MCP_TRANSPORTS,
      ),
    )
    .option('--print', 'print the resulting file instead of writing it')
    .option('--command <path>', 'the command the app runs (default: this Node and this paddock by absolute path, so the app needs no node on its PATH; `paddock` for --scope project)')
    .option('--json', 'print the outcome as JSON, for scripts')
    .action((target: string, flags: InitFlags) => {
      const result = mcpInit({
        target,
        scope: flags.scope,
        command: flags.command,
        transport: flags.transport,
        remoteUrl: flags.transport === 'http' ? remoteUrl() : undefined,
        print: flags.print,
        ctx: { platform: process.platform, homedir: homedir(), env: process.env, cwd: process.cwd() },
        resolveCommand: () =>
          selfCommand(process.argv[1], process.execPath) ?? resolvePaddockCommand({ platform: process.platform, env: process.env, argv1: process.argv[1] }),
      });
      report(result, flags);
    });
}

function report(r: McpInitResult, flags: InitFlags): void {
  const outcome = {
    target: r.target.name,
    scope: r.scope,
    path: r.path,
    status: r.status,
    written: r.written,
    backup: r.backup ?? null,
    command: r.command,
    args: [...r.launcher, 'mcp', 'serve'],
  };
  if (flags.print) {
    if (flags.json) printResult({ json: true }, { ...outcome, text: r.text }, () => undefined);
    else process.stdout.write(r.text);
    const would = { created: 'would be created', updated: 'would be updated', unchanged: 'already has the paddock server' }[r.status];
    say(`${r.path} ${would} (--print: nothing written).`);
    return;
  }
  printResult({ json: flags.json }, outcome, (o) => {
    if (o.status === 'unchanged') return `${r.target.label} already has the paddock server in ${o.path}; nothing changed.`;
    const what =
      flags.transport === 'http'
        ? `the paddock server is ${remoteUrl()}, with the API key from PADDOCK_API_KEY in ${r.target.label}'s environment`
        : `the paddock server runs \`${[o.command, ...o.args].join(' ')}\``;
    const lines = [`${o.status === 'created' ? 'Created' : 'Updated'} ${o.path}: ${what}.`];
    if (o.backup) lines.push(`Backup of the previous file: ${o.backup}`);
    lines.push(`Restart ${r.target.label} (or reload its MCP servers) to use it.`);
    return lines.join('\n');
  });
  if (!flags.json) warnIfUnconfigured();
}

/** The entry holds no key: the server reads it from the CLI config, which had better have one. */
function warnIfUnconfigured(): void {
  try {
    const config = resolveConfig();
    if (!config.baseUrl || !config.apiKey) {
      say('Note: the CLI has no base URL or API key yet; run `paddock signup` or `paddock config set-key` before using the tools.');
    }
  } catch {
    // an unreadable config is reported by the commands that need it
  }
}
