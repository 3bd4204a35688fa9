import { z } from 'zod';
import { booleanFlag, timestamp } from '../common-schemas.ts';
import { MAX_PATTERN_LENGTH } from '../../services/files/limits.ts';
import { normalisePath, pathProblem, WORKSPACE } from '../../services/files/paths.ts';

export { SandboxParams as FileParams } from '../sandboxes/schema.ts';

const PATH_DESCRIPTION = 'A path in the sandbox; relative paths are relative to /workspace. `..` and symlinks resolve inside the sandbox.';

const filePath = z
  .string()
  .superRefine((value, ctx) => {
    const problem = pathProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((value) => normalisePath(value))
  .meta({ description: PATH_DESCRIPTION });

/** A path a route writes: the sandbox's file system is read-only but for these places. */
const writtenPath = filePath.meta({
  description: `${PATH_DESCRIPTION} Only /workspace, /tmp and /dev/shm are writable; a path elsewhere answers 403 permission_denied.`,
});

const directoryPath = filePath.default(WORKSPACE).meta({ description: `${PATH_DESCRIPTION} Default /workspace.` });

const lineNumber = z
  .string()
  .regex(/^[1-9][0-9]{0,8}$/, { error: 'must be a line number (1 or more)' })
  .transform(Number);

const pattern = (what: string) =>
  z
    .string()
    .min(1)
    .max(MAX_PATTERN_LENGTH)
    .refine((v) => !v.includes('\0'), { error: 'must not contain NUL bytes' })
    .refine((v) => v.isWellFormed(), { error: 'must be well-formed Unicode' })
    .meta({ description: what });

const text = z.string().refine((v) => v.isWellFormed(), { error: 'must be well-formed Unicode (no lone surrogates)' });

export const ViewFileQuery = z.strictObject({
  path: filePath,
  startLine: lineNumber.optional().meta({ description: 'First line (1-based, inclusive); default 1' }),
  endLine: lineNumber.optional().meta({ description: 'Last line (inclusive); default and clamped to the last line' }),
  encoding: z
    .enum(['auto', 'utf-8', 'base64'])
    .default('auto')
    .meta({
      description:
        'auto (default): `content` when the bytes are valid UTF-8, else `contentBase64`; ' +
        'base64: always `contentBase64`; utf-8: always `content`, invalid bytes as U+FFFD',
    }),
});

export const CreateFileQuery = z.strictObject({
  path: writtenPath,
  overwrite: booleanFlag.default(true).meta({ description: 'false: answer 409 file_exists when the path exists' }),
});

export const CreateFileBody = z
  .strictObject({
    content: text.optional().meta({ description: 'The content as text, written as UTF-8' }),
    contentBase64: z.base64().optional().meta({ description: 'The content as base64 (any bytes)' }),
  })
  .refine((b) => (b.content === undefined) !== (b.contentBase64 === undefined), {
    error: 'send exactly one of content and contentBase64',
  });

export const EditFileQuery = z.strictObject({ path: writtenPath });

export const EditFileBody = z.strictObject({
  oldText: text.pipe(z.string().min(1)).meta({ description: 'The exact text to replace' }),
  newText: text,
  replaceAll: z.boolean().default(false).meta({ description: 'Replace every occurrence (else it must occur exactly once)' }),
});

export const ListFilesQuery = z.strictObject({ path: directoryPath });

export const GlobQuery = z.strictObject({
  pattern: pattern('Glob: `*`, `?`, `[…]`, `{a,b}`, `**` across directories; relative to `path`, or absolute'),
  path: directoryPath,
});

export const GrepQuery = z.strictObject({
  pattern: pattern('A POSIX extended regular expression (GNU grep -E)'),
  path: directoryPath.meta({ description: 'A directory to search recursively, or one file; default /workspace' }),
  glob: pattern('Only files whose path relative to `path` matches this glob').optional(),
  ignoreCase: booleanFlag.default(false),
});

export const FileViewResponse = z.object({
  path: z.string(),
  content: z.string().optional().meta({ description: 'The lines as text, when encoding is utf-8' }),
  contentBase64: z.string().optional().meta({ description: 'The lines as base64, when encoding is base64' }),
  encoding: z.enum(['utf-8', 'base64']),
  startLine: z.int(),
  endLine: z.int().meta({ description: 'The last line answered (0 for an empty file)' }),
  totalLines: z.int(),
  truncated: z.boolean().meta({ description: 'Lines follow endLine' }),
  size: z.int().meta({ description: "The whole file's size in bytes" }),
});

export const WrittenFileResponse = z.object({
  path: z.string(),
  size: z.int(),
  overwritten: z.boolean().meta({ description: 'An existing file was replaced' }),
});

export const EditResponse = z.object({ path: z.string(), replacements: z.int() });

export const ListingResponse = z.object({
  path: z.string(),
  entries: z.array(
    z.object({
      name: z.string(),
      type: z.enum(['file', 'dir', 'symlink', 'other']),
      size: z.int().meta({ description: 'Bytes (of a symlink: its target name)' }),
      modifiedAt: timestamp,
    }),
  ),
  truncated: z.boolean(),
});

export const GlobResponse = z.object({
  pattern: z.string(),
  matches: z.array(z.string()).meta({ description: 'Absolute paths, sorted' }),
  truncated: z.boolean(),
});

export const GrepResponse = z.object({
  pattern: z.string(),
  matches: z.array(z.object({ path: z.string(), line: z.int(), text: z.string() })),
  truncated: z.boolean(),
});

export const RemovePathQuery = z.strictObject({
  path: writtenPath,
  recursive: booleanFlag.default(false).meta({ description: 'true: remove a directory with everything in it (else only an empty one)' }),
});

export const MovePathBody = z.strictObject({
  from: writtenPath.meta({ description: `What to move (a symlink is moved itself). ${PATH_DESCRIPTION}` }),
  to: writtenPath.meta({ description: `Its new name (not a directory to move it into); its parent directories are made. ${PATH_DESCRIPTION}` }),
  overwrite: z.boolean().default(false).meta({ description: 'true: replace what is at `to` (a file, or an empty directory); else 409 file_exists' }),
});

export const PathQuery = z.strictObject({ path: filePath });

export const MakeDirQuery = z.strictObject({ path: writtenPath });

export const RawWriteQuery = CreateFileQuery;

export const PathResponse = z.object({ path: z.string() });

export const FileStatResponse = z.object({
  path: z.string(),
  type: z.enum(['file', 'dir', 'symlink', 'other']).meta({ description: 'What the path itself is: a final symlink is not followed' }),
  size: z.int().meta({ description: 'Bytes (of a symlink: its target name)' }),
  mode: z.string().meta({ description: 'The permission bits, four octal digits (`0644`)' }),
  modifiedAt: timestamp,
  target: z.string().optional().meta({ description: "A symlink's target, as written in it" }),
});

export const RawFileDownload = z.string().meta({ description: "The file's bytes, or the range of them asked for" });

export const ArchiveQuery = z.strictObject({ path: directoryPath });

export const ArchiveDownload = z.string().meta({
  description: 'The archive as tar produces it in the sandbox: a directory as `./…` members, any other path as its one member',
});

export const ExtractedArchiveResponse = z.object({
  path: z.string().meta({ description: 'The directory the archive was extracted under' }),
  files: z.int().meta({ description: 'Members extracted: files, directories and links' }),
  bytes: z.int().meta({ description: 'Bytes of the archive received, as sent (compressed or not)' }),
});
