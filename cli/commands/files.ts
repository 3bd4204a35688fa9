import type { Command } from 'commander';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { bytes } from '../output/format.ts';
import { grepLines, listingTable } from '../output/files.ts';
import { printResult, say } from '../output/print.ts';
import { apiClient } from '../services/client.ts';
import { fileContent, type ContentFlags } from '../services/files.ts';
import { pickSession } from '../services/sessions.ts';
import { jsonOption, positiveInt, sessionOption } from './options.ts';

type Common = { json?: boolean; session?: string };

/** The client and the session a files command works on. */
async function target(opts: Common) {
  const client = apiClient();
  return { client, id: await pickSession(client, opts.session) };
}

const sub = (files: Command, name: string, description: string) => jsonOption(sessionOption(files.command(name).description(description)));

export function filesCommand(program: Command): void {
  const files = program.command('files').description("work with the files in a session (relative paths start at /workspace)");

  sub(files, 'view', 'print a file, or a range of its lines')
    .argument('<path>', 'the file')
    .option('--start <line>', 'the first line (1-based)', positiveInt)
    .option('--end <line>', 'the last line', positiveInt)
    .action(async (path: string, opts: Common & { start?: number; end?: number }) => {
      const { client, id } = await target(opts);
      const view = await client.viewFile(id, { path, startLine: opts.start, endLine: opts.end });
      if (opts.json) return printResult(opts, view, () => undefined);
      if (view.contentBase64 !== undefined) process.stdout.write(Buffer.from(view.contentBase64, 'base64'));
      else process.stdout.write(view.content ?? '');
      if (view.truncated) say(`(lines ${view.startLine}-${view.endLine} of ${view.totalLines}: more with --start ${view.endLine + 1})`);
    });

  sub(files, 'create', 'create or replace a file with content from --content, a local file (--from), or standard input')
    .argument('<path>', 'the file to write (parent directories are created)')
    .option('--content <text>', 'the content')
    .option('--from <local_file>', 'copy the content of this local file')
    .option('--no-overwrite', 'fail if the file exists')
    .action(async (path: string, opts: Common & ContentFlags & { overwrite: boolean }) => {
      const content = await fileContent(opts);
      const { client, id } = await target(opts);
      const written = await client.createFile(id, { path, overwrite: opts.overwrite, ...content });
      printResult(opts, written, (w) => `${w.overwritten ? 'Replaced' : 'Created'} ${w.path} (${bytes(w.size)})`);
    });

  sub(files, 'edit', 'replace an exact piece of text in a file')
    .argument('<path>', 'the file')
    .requiredOption('--old <text>', 'the exact text to replace')
    .requiredOption('--new <text>', 'the text to put instead')
    .option('--all', 'replace every occurrence (else the text must occur exactly once)')
    .action(async (path: string, opts: Common & { old: string; new: string; all?: boolean }) => {
      if (opts.old === '') throw new CliError('--old must not be empty.', { exitCode: EXIT_USAGE });
      const { client, id } = await target(opts);
      const r = await client.editFile(id, { path, oldText: opts.old, newText: opts.new, replaceAll: Boolean(opts.all) });
      printResult(opts, r, (x) => `${x.replacements} replacement${x.replacements === 1 ? '' : 's'} in ${x.path}`);
    });

  sub(files, 'ls', 'list a directory')
    .argument('[path]', 'the directory (default /workspace)')
    .action(async (path: string | undefined, opts: Common) => {
      const { client, id } = await target(opts);
      const listing = await client.listDir(id, path);
      printResult(opts, listing, (l) => (l.entries.length ? listingTable(l) : undefined));
      if (!opts.json && listing.entries.length === 0) say(`${listing.path} is empty.`);
      if (!opts.json && listing.truncated) say('(the listing was cut: too many entries)');
    });

  sub(files, 'glob', 'find files by a glob pattern (** crosses directories)')
    .argument('<pattern>', 'e.g. "**/*.py"')
    .option('--path <dir>', 'where to start (default /workspace)')
    .action(async (pattern: string, opts: Common & { path?: string }) => {
      const { client, id } = await target(opts);
      const r = await client.glob(id, { pattern, path: opts.path });
      printResult(opts, r, (x) => x.matches.join('\n'));
      if (!opts.json && r.matches.length === 0) say('No matches.');
      if (!opts.json && r.truncated) say('(more matches were left out)');
    });

  sub(files, 'grep', 'search file contents with a regular expression (POSIX extended)')
    .argument('<pattern>', 'the regular expression')
    .option('--path <path>', 'a directory to search recursively, or one file (default /workspace)')
    .option('--glob <glob>', 'only files matching this glob')
    .option('-i, --ignore-case', 'ignore case')
    .action(async (pattern: string, opts: Common & { path?: string; glob?: string; ignoreCase?: boolean }) => {
      const { client, id } = await target(opts);
      const r = await client.grep(id, { pattern, path: opts.path, glob: opts.glob, ignoreCase: opts.ignoreCase });
      printResult(opts, r, grepLines);
      if (!opts.json && r.matches.length === 0) say('No matches.');
      if (!opts.json && r.truncated) say('(more matches were left out)');
    });
}
