import { InvalidArgumentError, type Command } from 'commander';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { fieldFlags } from '../output/fields.ts';
import { describeCreatedPreview, previewTable } from '../output/previews.ts';
import { printResult, say } from '../output/print.ts';
import { openInBrowser } from '../services/browser.ts';
import { apiClient } from '../services/client.ts';
import { browserUrl, createPreview, deletePreview, listPreviews } from '../services/previews.ts';
import { pickSession } from '../services/sessions.ts';
import { durationSeconds, jsonOption, sessionOption } from './options.ts';

interface Flags {
  session?: string;
  json?: boolean;
}

type CreateFlags = Flags & { public?: boolean; private?: boolean; open?: boolean; expires?: number };

function portNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > 65_535) throw new InvalidArgumentError('must be a port, 1 to 65535.');
  return n;
}

/** `preview <port>`, `preview ls` and `preview rm <port>`: a session's ports at URLs of their own. */
export function previewCommands(program: Command): void {
  const preview = fieldFlags(
    jsonOption(
      sessionOption(
        program
          .command('preview')
          .description(
            "make a port of a session reachable at a URL of its own and print it (a private preview's carries its token); `preview ls` lists them, `preview rm` removes one",
          )
          .argument('[port]', 'the port a program in the session listens on', portNumber)
          .option('--public', 'open to everyone, no token needed')
          .option('--private', 'make a public preview private again')
          .option('--expires <duration>', "the token's lifetime: seconds, or 90s, 5m, 1h (default 1h, at most a week)", durationSeconds)
          .option('--open', 'open it in the default browser too'),
      ),
    ),
    { 'body.port': '<port>', 'body.public': '--public', 'body.expiresInSeconds': '--expires' },
  );
  preview.action(async (port: number | undefined, opts: CreateFlags) => {
    if (port === undefined) throw new CliError('Say which port: `paddock preview <port>`.', { hint: 'Or `paddock preview ls` to list the previews.', exitCode: EXIT_USAGE });
    if (opts.public && opts.private) throw new CliError('Give --public or --private, not both.', { exitCode: EXIT_USAGE });
    const client = apiClient();
    const sessionId = await pickSession(client, opts.session);
    const access = opts.public ? true : opts.private ? false : undefined;
    const created = await createPreview(client, sessionId, { port, public: access, expiresInSeconds: opts.expires });
    const url = browserUrl(created);
    printResult(opts, created, () => url);
    say(describeCreatedPreview(created, sessionId));
    if (opts.open) {
      const opened = await openInBrowser(url);
      say(opened.opened ? 'Opened in the browser.' : `Not opened in a browser: ${opened.reason}. Open the address above yourself.`);
    }
  });

  jsonOption(sessionOption(preview.command('ls').description("list a session's previews: port, access, when the last token expires, URL (never a token)"))).action(
    async (opts: Flags) => {
      const client = apiClient();
      const list = await listPreviews(client, await pickSession(client, opts.session));
      printResult(opts, list, (l) => (l.length ? previewTable(l) : undefined));
      if (!opts.json && list.length === 0) say('No previews.');
    },
  );

  jsonOption(
    sessionOption(
      preview
        .command('rm')
        .description('remove the preview of a port: its tokens stop at once, and what is open through it is closed')
        .argument('<port>', 'the previewed port', portNumber),
    ),
  ).action(async (port: number, opts: Flags) => {
    const client = apiClient();
    const sessionId = await pickSession(client, opts.session);
    await deletePreview(client, sessionId, port);
    printResult(opts, { port, deleted: true }, () => undefined);
    say(`Removed the preview of port ${port} of ${sessionId}.`);
  });
}
