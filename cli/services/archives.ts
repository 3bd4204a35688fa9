import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createWriteStream, lstatSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PaddockClient } from '../api/index.ts';
import type { ExtractedArchive } from '../api/types.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';

export interface DownloadFlags {
  /** A local file (tar.gz when it ends in .gz or .tgz), or '-' for standard output. */
  output?: string;
}

/** Where a download goes and whether it is gzip: -o decides, else `<name>.tar` here. */
export function downloadTarget(remotePath: string, output: string | undefined): { file: string; gzip: boolean } {
  const file = output ?? `${posix.basename(remotePath.replace(/\/+$/, '')) || 'workspace'}.tar`;
  return { file, gzip: /\.(t?gz)$/.test(file) };
}

/**
 * Downloads an archive of `remotePath` into a local file (or standard output) as it comes. A file
 * is written under a temporary name and renamed once the archive is whole, so a broken download
 * never leaves a file that looks complete.
 */
export async function downloadArchive(client: PaddockClient, id: string, remotePath: string, flags: DownloadFlags): Promise<{ file: string; bytes: number }> {
  const { file, gzip } = downloadTarget(remotePath, flags.output);
  let bytes = 0;
  const source = Readable.from(
    (async function* () {
      for await (const chunk of client.downloadArchive(id, { path: remotePath, gzip })) {
        bytes += chunk.byteLength;
        yield chunk;
      }
    })(),
  );
  if (file === '-') {
    await pipeline(source, process.stdout, { end: false });
    return { file, bytes };
  }
  const partial = `${file}.part`;
  try {
    await pipeline(source, createWriteStream(partial));
    renameSync(partial, file);
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  }
  return { file, bytes };
}

export interface UploadFlags {
  /** Honour .gitignore (commander's --no-gitignore sets it false). */
  gitignore: boolean;
  gzip?: boolean;
}

/**
 * Builds a tar of `localDir` with the system's tar and streams it to the sandbox as tar writes it.
 * By default what git would ignore is left out (gitFiles); without git, GNU tar's
 * --exclude-vcs-ignores (.gitignore files, by tar's reading of them), and .git itself.
 */
export async function uploadArchive(client: PaddockClient, id: string, localDir: string, remotePath: string, flags: UploadFlags): Promise<ExtractedArchive> {
  if (!statSync(localDir, { throwIfNoEntry: false })?.isDirectory()) {
    throw new CliError(`${localDir} is not a local directory.`, { exitCode: EXIT_USAGE });
  }
  const listed = flags.gitignore ? gitFiles(localDir) : undefined;
  const args = ['-c', '-f', '-', '-C', localDir, ...(flags.gzip ? ['-z'] : [])];
  if (listed) args.push('--null', '--no-recursion', '-T', '-');
  else args.push(...(flags.gitignore ? ['--exclude-vcs-ignores', '--exclude=.git'] : []), '.');
  const tar = spawn('tar', args, { stdio: [listed ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  if (listed) tar.stdin!.end(listed);
  let errors = '';
  tar.stderr!.on('data', (chunk: Buffer) => void (errors.length < 4000 && (errors += chunk.toString())));
  const exited = new Promise<number | null>((resolve, reject) => {
    tar.once('error', reject);
    tar.once('close', resolve);
  });
  async function* archive(): AsyncGenerator<Uint8Array> {
    try {
      yield* tar.stdout! as AsyncIterable<Buffer>;
      const code = await exited;
      // A tar that failed must not reach the sandbox as a complete archive: the upload breaks off.
      if (code !== 0) throw new CliError(`tar could not read ${localDir}: ${errors.trim() || `exit ${String(code)}`}`);
    } finally {
      if (tar.exitCode === null) tar.kill();
    }
  }
  try {
    return await client.uploadArchive(id, { path: remotePath, archive: archive(), gzip: flags.gzip });
  } catch (err) {
    const code = await exited.catch(() => null);
    if (code !== 0 && code !== null && errors) throw new CliError(`tar could not read ${localDir}: ${errors.trim()}`);
    throw err;
  }
}

/**
 * The files git would not ignore (NUL-separated): in a git work tree, `git ls-files` (tracked, and
 * untracked but not ignored); elsewhere the same listing over a throwaway empty repository, so
 * that .gitignore files are read by git's own rules (`node_modules/`, `/build/`, `!keep`), which
 * GNU tar's --exclude-vcs-ignores does not all follow. Undefined without git.
 */
function gitFiles(dir: string): Buffer | undefined {
  const inside = spawnSync('git', ['-C', dir, 'rev-parse', '--is-inside-work-tree'], { encoding: 'utf8' });
  if (inside.error) return undefined;
  if (inside.status === 0 && inside.stdout.trim() === 'true') {
    return listed(dir, spawnSync('git', ['-C', dir, 'ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', '.'], { maxBuffer: LISTING_MAX_BYTES }));
  }
  const scratch = mkdtempSync(join(tmpdir(), 'paddock-upload-'));
  try {
    if (spawnSync('git', ['init', '-q', '--bare', scratch]).status !== 0) return undefined;
    const env = { ...process.env, GIT_DIR: scratch, GIT_WORK_TREE: dir };
    return listed(dir, spawnSync('git', ['-C', dir, 'ls-files', '-z', '--others', '--exclude-standard', '--', '.'], { env, maxBuffer: LISTING_MAX_BYTES }));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const LISTING_MAX_BYTES = 256 * 1024 * 1024;

function listed(dir: string, files: SpawnSyncReturns<Buffer>): Buffer | undefined {
  if (files.status !== 0) return undefined;
  // Deleted but still tracked files are listed too: tar would fail on them.
  const names = files.stdout
    .toString('utf8')
    .split('\0')
    .filter((name) => name !== '' && lstatSync(`${dir}/${name}`, { throwIfNoEntry: false }) !== undefined);
  return Buffer.from(names.map((name) => `${name}\0`).join(''));
}
