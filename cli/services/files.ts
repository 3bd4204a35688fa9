import { readFileSync } from 'node:fs';
import type { CreateFileInput } from '../api/types.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { readStdin, stdinIsPiped } from '../terminal/stdin.ts';

export interface ContentFlags {
  content?: string;
  from?: string;
}

/** Bytes as the API body wants them: text when they are UTF-8, else base64. */
export function contentOf(bytes: Buffer): Pick<CreateFileInput, 'content' | 'contentBase64'> {
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes) ? { content: text } : { contentBase64: bytes.toString('base64') };
}

/** The new file's content: --content, else the local file --from, else standard input. */
export async function fileContent(flags: ContentFlags): Promise<Pick<CreateFileInput, 'content' | 'contentBase64'>> {
  if (flags.content !== undefined && flags.from !== undefined) {
    throw new CliError('Give the content one way: --content or --from, not both.', { exitCode: EXIT_USAGE });
  }
  if (flags.content !== undefined) return { content: flags.content };
  if (flags.from !== undefined) {
    try {
      return contentOf(readFileSync(flags.from));
    } catch (err) {
      throw new CliError(`Cannot read ${flags.from}: ${(err as Error).message}`, { exitCode: EXIT_USAGE });
    }
  }
  if (!stdinIsPiped()) {
    throw new CliError('The file content is needed.', {
      hint: 'Pass --content <text> or --from <local_file>, or pipe the content on standard input.',
      exitCode: EXIT_USAGE,
      code: 'input_required',
    });
  }
  return contentOf(await readStdin());
}
