import type { Command } from 'commander';
import { CliError, EXIT_GREP_TROUBLE, EXIT_NO_MATCH, EXIT_USAGE, withExitCode } from '../errors.ts';
import { bytes } from '../output/format.ts';
import { fieldFlags, type FieldFlags } from '../output/fields.ts';
import { grepLines, listingTable } from '../output/files.ts';
import { printResult, say } from '../output/print.ts';
import { apiClient } from '../services/client.ts';
import { downloadArchive, uploadArchive, type DownloadFlags, type UploadFlags } from '../services/archives.ts';
import { fileContent, type ContentFlags } from '../services/files.ts';
import { catFile, putFile, type ByteRangeFlags } from '../services/raw-files.ts';
import { pickSession } from '../services/sessions.ts';
import { jsonOption, nonNegativeInt, positiveInt, sessionOption } from './options.ts';

type Common = { json?: boolean; session?: string };

/** The client and the session a files command works on. */
async function target(opts: Common) {
  const client = apiClient();
  return { client, id: await pickSession(client, opts.session) };
}

const sub = (files: Command, name: string, description: string, fields: FieldFlags) =>
  fieldFlags(jsonOption(sessionOption(files.command(name).description(description))), { sandboxId: '--session', ...fields });

export function filesCommand(program: Command): void {
  const files = program.command('files').description("work with the files in a session (relative paths start at /workspace)");

  sub(files, 'view', 'print a file, or a range of its lines', { 'query.path': '<path>', startLine: '--start', endLine: '--end' })
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

  sub(files, 'create', 'create or replace a file with content from --content, a local file (--from), or standard input', { 'query.path': '<path>', 'body.content': 'the content', contentBase64: 'the content', 'send overwrite=true': 'leave out --no-overwrite', overwrite: '--no-overwrite' })
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

  sub(files, 'edit', 'replace an exact piece of text in a file', { 'query.path': '<path>', oldText: '--old', newText: '--new', replaceAll: '--all' })
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

  sub(files, 'ls', 'list a directory', { 'query.path': '[path]' })
    .argument('[path]', 'the directory (default /workspace)')
    .action(async (path: string | undefined, opts: Common) => {
      const { client, id } = await target(opts);
      const listing = await client.listDir(id, path);
      printResult(opts, listing, (l) => (l.entries.length ? listingTable(l) : undefined));
      if (!opts.json && listing.entries.length === 0) say(`${listing.path} is empty.`);
      if (!opts.json && listing.truncated) say('(the listing was cut: too many entries)');
    });

  sub(files, 'glob', 'find files by a glob pattern (** crosses directories)', { 'query.pattern': '<pattern>', 'query.path': '--path' })
    .argument('<pattern>', 'e.g. "**/*.py"')
    .option('--path <dir>', 'where to start (default /workspace)')
    .action(async (pattern: string, opts: Common & { path?: string }) => {
      const { client, id } = await target(opts);
      const r = await client.glob(id, { pattern, path: opts.path });
      printResult(opts, r, (x) => x.matches.join('\n'));
      if (!opts.json && r.matches.length === 0) say('No matches.');
      if (!opts.json && r.truncated) say('(more matches were left out)');
    });

  sub(files, 'grep', 'search file contents with a regular expression (POSIX extended)', { 'query.pattern': '<pattern>', 'query.path': '--path', 'query.glob': '--glob', ignoreCase: '--ignore-case' })
    .argument('<pattern>', 'the regular expression')
    .option('--path <path>', 'a directory to search recursively, or one file (default /workspace)')
    .option('--glob <glob>', 'only files matching this glob')
    .option('-i, --ignore-case', 'ignore case')
    .action(async (pattern: string, opts: Common & { path?: string; glob?: string; ignoreCase?: boolean }) => {
      // Like grep: 0 when something matched, 1 when nothing did, 2 when the search went wrong.
      let r;
      try {
        const { client, id } = await target(opts);
        r = await client.grep(id, { pattern, path: opts.path, glob: opts.glob, ignoreCase: opts.ignoreCase });
      } catch (err) {
        throw withExitCode(err, EXIT_GREP_TROUBLE);
      }
      printResult(opts, r, grepLines);
      if (!opts.json && r.matches.length === 0) say('No matches.');
      if (!opts.json && r.truncated) say('(more matches were left out)');
      if (r.matches.length === 0) process.exitCode = EXIT_NO_MATCH;
    });

  sub(files, 'rm', 'remove a file, a symlink (not what it points at), or a directory (-r: with everything in it)', { 'query.path': '<path>', recursive: '--recursive' })
    .argument('<path>', 'what to remove')
    .option('-r, --recursive', 'remove a directory with everything in it (else only an empty one)')
    .action(async (path: string, opts: Common & { recursive?: boolean }) => {
      const { client, id } = await target(opts);
      await client.removePath(id, path, { recursive: Boolean(opts.recursive) });
      printResult(opts, { path, removed: true }, () => undefined);
      if (!opts.json) say(`Removed ${path}`);
    });

  sub(files, 'mv', 'move (rename) a file or directory to a new name, making its parent directories', { 'body.from': '<from>', 'body.to': '<to>', overwrite: '--overwrite' })
    .argument('<from>', 'what to move')
    .argument('<to>', 'its new name (not a directory to move it into)')
    .option('-f, --overwrite', 'replace what is at <to> (a file, or an empty directory)')
    .action(async (from: string, to: string, opts: Common & { overwrite?: boolean }) => {
      const { client, id } = await target(opts);
      const moved = await client.movePath(id, { from, to, overwrite: Boolean(opts.overwrite) });
      printResult(opts, moved, (m) => `Moved ${from} to ${m.path}`);
    });

  sub(files, 'mkdir', 'make a directory and its parents (one that exists is fine)', { 'query.path': '<path>' })
    .argument('<path>', 'the directory')
    .action(async (path: string, opts: Common) => {
      const { client, id } = await target(opts);
      const made = await client.makeDir(id, path);
      printResult(opts, made, (m) => m.path);
    });

  sub(files, 'stat', 'describe a path: type, size, mode, modification time (a symlink is not followed)', { 'query.path': '<path>' })
    .argument('<path>', 'the path')
    .action(async (path: string, opts: Common) => {
      const { client, id } = await target(opts);
      const st = await client.statPath(id, path);
      printResult(opts, st, (s) => `${s.path}\t${s.type}\t${s.size}\t${s.mode}\t${s.modifiedAt}${s.target !== undefined ? `\t-> ${s.target}` : ''}`);
    });

  sub(files, 'cat', "write a file's bytes (or a range of them) to standard output, streamed", { 'query.path': '<path>' })
    .argument('<path>', 'the file')
    .option('--start <byte>', 'the first byte (0-based)', nonNegativeInt)
    .option('--end <byte>', 'the last byte (inclusive)', nonNegativeInt)
    .action(async (path: string, opts: Common & ByteRangeFlags) => {
      const { client, id } = await target(opts);
      await catFile(client, id, path, opts);
    });

  sub(files, 'put', 'write a local file, or standard input, to a file in the session, streamed (any size the disk holds)', { 'query.path': '<path>', overwrite: '--no-overwrite' })
    .argument('<path>', 'the file to write (parent directories are created)')
    .argument('[local_file]', 'the local file to send ("-" or none: standard input)')
    .option('--no-overwrite', 'fail if the file exists')
    .action(async (path: string, localFile: string | undefined, opts: Common & { overwrite: boolean }) => {
      const { client, id } = await target(opts);
      const written = await putFile(client, id, path, localFile, opts.overwrite);
      printResult(opts, written, (w) => `${w.overwritten ? 'Replaced' : 'Created'} ${w.path} (${bytes(w.size)})`);
    });

  sub(files, 'download', 'download a directory (or a file) as a tar archive, streamed', { 'query.path': '<path>' })
    .argument('<path>', 'the directory or file in the session')
    .option('-o, --output <file>', 'where to save it: tar.gz when it ends in .gz or .tgz, "-" for standard output (default <name>.tar here)')
    .action(async (path: string, opts: Common & DownloadFlags) => {
      const { client, id } = await target(opts);
      const saved = await downloadArchive(client, id, path, opts);
      if (saved.file !== '-') printResult(opts, saved, (s) => `Saved ${s.file} (${bytes(s.bytes)})`);
    });

  sub(files, 'upload', 'upload a local directory into the session as a tar archive, streamed and extracted there', { 'query.path': '<path>' })
    .argument('<local_dir>', 'the local directory whose contents are sent')
    .argument('<path>', 'the directory in the session to extract into (created when missing)')
    .option('--no-gitignore', 'send everything: by default what git ignores is left out (in a git work tree the files git lists; elsewhere .gitignore files and .git are left out)')
    .option('--gzip', 'compress on the way (for slow links)')
    .addHelpText('after', '\nBy default .gitignore is honoured: ignored files and the .git directory are not sent. --no-gitignore sends everything.')
    .action(async (localDir: string, path: string, opts: Common & UploadFlags) => {
      const { client, id } = await target(opts);
      const r = await uploadArchive(client, id, localDir, path, opts);
      printResult(opts, r, (x) => `Extracted ${x.files} entr${x.files === 1 ? 'y' : 'ies'} into ${x.path} (${bytes(x.bytes)} sent)`);
    });
}
