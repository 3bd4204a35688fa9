import { createReadStream, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PaddockClient } from '../api/index.ts';
import type { WrittenFile } from '../api/types.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { stdinIsPiped } from '../terminal/stdin.ts';

export interface ByteRangeFlags {
  /** The first byte (0-based). */
  start?: number;
  /** The last byte, inclusive. */
  end?: number;
}

/** Streams a file of the sandbox (or the bytes from --start to --end) to standard output as it comes. */
export async function catFile(client: PaddockClient, id: string, path: string, flags: ByteRangeFlags): Promise<number> {
  if (flags.start !== undefined && flags.end !== undefined && flags.end < flags.start) {
    throw new CliError('--end must not come before --start.', { exitCode: EXIT_USAGE });
  }
  const body = await client.readRaw(id, path, { start: flags.start, end: flags.end });
  let bytes = 0;
  const counted = Readable.from(
    (async function* () {
      for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
        bytes += chunk.byteLength;
        yield chunk;
      }
    })(),
  );
  await pipeline(counted, process.stdout, { end: false });
  return bytes;
}

/**
 * Writes a local file, or standard input, to `path` in the sandbox, streamed as it is read: the
 * sandbox's file is replaced only once every byte has arrived.
 */
export async function putFile(client: PaddockClient, id: string, path: string, localFile: string | undefined, overwrite: boolean): Promise<WrittenFile> {
  let source: AsyncIterable<Uint8Array>;
  if (localFile !== undefined && localFile !== '-') {
    if (!statSync(localFile, { throwIfNoEntry: false })?.isFile()) throw new CliError(`${localFile} is not a local file.`, { exitCode: EXIT_USAGE });
    source = createReadStream(localFile);
  } else if (stdinIsPiped()) {
    source = process.stdin;
  } else {
    throw new CliError('The file content is needed.', {
      hint: 'Name a local file, or pipe the content on standard input.',
      exitCode: EXIT_USAGE,
      code: 'input_required',
    });
  }
  return client.writeRaw(id, path, source, { overwrite });
}
