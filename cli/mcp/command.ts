import { homedir } from 'node:os';
import { Option, type Command } from 'commander';
import { MCP_SCOPES, MCP_TARGETS, type McpScope } from '../../shared/mcp/targets.ts';
import { resolveConfig } from '../config/resolve.ts';
import { printResult, say } from '../output/print.ts';
import { mcpInit, type McpInitResult } from './init.ts';
import { resolvePaddockCommand } from './paddock-command.ts';
import { serveMcp } from './serve.ts';

interface InitFlags {
  scope?: McpScope;
  print?: boolean;
  command?: string;
  json?: boolean;
}

const TARGET_HELP = MCP_TARGETS.map((t) => `${t.name} (${t.label})`).join(', ');

/** `paddock mcp serve` and `paddock mcp init <target>`. */
export function registerMcpCommands(program: Command): void {
  const mcp = program.command('mcp').description('the MCP tool server that lets AI apps (Claude, Cursor, VS Code…) use Paddock');

  mcp
    .command('serve')
    .description('run the MCP server on stdin/stdout (AI apps start this themselves; it uses the API key from `paddock config`)')
    .action(async () => {
      await serveMcp();
    });

  mcp
    .command('init')
    .description("add the paddock MCP server to an AI app's own config file (other servers and comments are kept, a backup is made)")
    .argument('<target>', `the app: ${TARGET_HELP}`)
    .addOption(new Option('--scope <scope>', 'user: for every project (default); project: the config file in this folder').choices(MCP_SCOPES))
    .option('--print', 'print the resulting file instead of writing it')
    .option('--command <path>', 'the command the app runs (default: the path of this paddock, or `paddock` for --scope project)')
    .option('--json', 'print the outcome as JSON, for scripts')
    .action((target: string, flags: InitFlags) => {
      const result = mcpInit({
        target,
        scope: flags.scope,
        command: flags.command,
        print: flags.print,
        ctx: { platform: process.platform, homedir: homedir(), env: process.env, cwd: process.cwd() },
        resolveCommand: () => resolvePaddockCommand({ platform: process.platform, env: process.env, argv1: process.argv[1] }),
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
    const lines = [`${o.status === 'created' ? 'Created' : 'Updated'} ${o.path}: the paddock server runs \`${o.command} mcp serve\`.`];
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
