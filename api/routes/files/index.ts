import { ApiError, type ErrorCode } from '../../../shared/errors.ts';
import { abortOnDisconnect, confirmedStream } from '../../services/streaming.ts';
import type { Config } from '../../../shared/config.ts';
import { presentEdit, presentExtractedArchive, presentFileStat, presentFileView, presentGlob, presentGrep, presentListing, presentWrittenFile } from '../../presenters/file.ts';
import { ARCHIVE_MEDIA_TYPES, extractArchive, GZIP, openArchive, TAR } from '../../services/files/archive.ts';
import { editFile } from '../../services/files/edit.ts';
import { globFiles } from '../../services/files/glob.ts';
import { grepFiles } from '../../services/files/grep.ts';
import { listDirectory } from '../../services/files/list.ts';
import { viewFile } from '../../services/files/view.ts';
import { writeFileBytes } from '../../services/files/write.ts';
import { makeDir, movePath, removePath } from '../../services/files/manage.ts';
import { openRaw, parseRange, writeRaw } from '../../services/files/raw.ts';
import { statPath } from '../../services/files/stat.ts';
import { ANY_MEDIA_TYPE } from '../../middleware/body.ts';
import { accountIdOf, route, type Route } from '../route.ts';
import {
  ArchiveDownload,
  ArchiveQuery,
  CreateFileBody,
  CreateFileQuery,
  EditFileBody,
  EditFileQuery,
  EditResponse,
  ExtractedArchiveResponse,
  FileParams,
  FileStatResponse,
  FileViewResponse,
  MakeDirQuery,
  MovePathBody,
  PathQuery,
  PathResponse,
  RawFileDownload,
  RawWriteQuery,
  RemovePathQuery,
  GlobQuery,
  GlobResponse,
  GrepQuery,
  GrepResponse,
  ListFilesQuery,
  ListingResponse,
  ViewFileQuery,
  WrittenFileResponse,
} from './schema.ts';

// The file routes: each operation runs as small fixed scripts in the sandbox (services/files),
// so the sandbox's own view of its file system confines every path.

const COMMON_ERRORS: ErrorCode[] = ['sandbox_not_found', 'sandbox_not_running', 'permission_denied', 'not_a_regular_file', 'file_io_error', 'operation_timed_out'];
const WRITE_ERRORS: ErrorCode[] = ['file_too_large', 'insufficient_storage'];

/** The body carries up to the file limit as base64 (4/3 of it), plus room for JSON. */
const fileBodyLimit = (config: Config) => Math.ceil((config.PADDOCK_FILE_MAX_BYTES * 4) / 3) + 65536;

export const viewFileRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files',
    operationId: 'viewFile',
    summary: 'View a file, or a range of its lines; `content` for UTF-8, else `contentBase64`',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:read',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    query: ViewFileQuery,
    responses: { 200: { description: 'The lines asked for', schema: FileViewResponse } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'is_a_directory', 'not_a_directory', 'file_too_large'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    ctx.body = presentFileView(await viewFile(deps, sandboxId, query));
  },
);

export const createFileRoute = route(
  {
    method: 'put',
    path: '/v1/sandboxes/:id/files',
    operationId: 'createFile',
    summary: 'Create or replace a file atomically, creating its parent directories',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:write',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    query: CreateFileQuery,
    body: CreateFileBody,
    bodyLimitBytes: fileBodyLimit,
    responses: { 201: { description: 'Written', schema: WrittenFileResponse } },
    errors: [...COMMON_ERRORS, ...WRITE_ERRORS, 'file_exists', 'is_a_directory', 'not_a_directory'],
  },
  async (ctx, { params, query, body }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    const bytes = body.content !== undefined ? Buffer.from(body.content, 'utf8') : Buffer.from(body.contentBase64 ?? '', 'base64');
    ctx.status = 201;
    ctx.body = presentWrittenFile(await writeFileBytes(deps, sandboxId, query.path, bytes, query.overwrite));
  },
);

export const editFileRoute = route(
  {
    method: 'patch',
    path: '/v1/sandboxes/:id/files',
    operationId: 'editFile',
    summary: 'Replace an exact occurrence of a text in a file (or every one, with replaceAll)',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:write',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    query: EditFileQuery,
    body: EditFileBody,
    bodyLimitBytes: fileBodyLimit,
    responses: { 200: { description: 'Edited', schema: EditResponse } },
    errors: [...COMMON_ERRORS, ...WRITE_ERRORS, 'file_not_found', 'is_a_directory', 'not_a_directory', 'edit_no_match', 'edit_ambiguous'],
  },
  async (ctx, { params, query, body }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    ctx.body = presentEdit(await editFile(deps, sandboxId, { path: query.path, ...body }));
  },
);

export const listFilesRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files/ls',
    operationId: 'listDirectory',
    summary: 'List a directory (symlinks are listed, not followed), sorted by name',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:read',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    query: ListFilesQuery,
    responses: { 200: { description: 'The entries', schema: ListingResponse } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'not_a_directory'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    ctx.body = presentListing(await listDirectory(deps, sandboxId, query.path));
  },
);

export const globRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files/glob',
    operationId: 'globFiles',
    summary: 'Find paths matching a glob (`**` across directories)',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:read',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    query: GlobQuery,
    responses: { 200: { description: 'The matching paths', schema: GlobResponse } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'not_a_directory'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    ctx.body = presentGlob(await globFiles(deps, sandboxId, query));
  },
);

export const grepRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files/grep',
    operationId: 'grepFiles',
    summary: 'Search file contents with a POSIX extended regular expression',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:read',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    query: GrepQuery,
    responses: { 200: { description: 'The matching lines', schema: GrepResponse } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'not_a_directory'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    ctx.body = presentGrep(await grepFiles(deps, sandboxId, query));
  },
);

// Archives run Paddock's own tar, as the other file routes run Paddock's own scripts: the
// allowlist, which governs the commands an account runs, does not apply to them.

export const downloadArchiveRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files/archive',
    operationId: 'downloadArchive',
    summary: 'Download a directory (or a file) as a tar archive, or tar.gz with Accept: application/gzip, streamed as it is read',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:read',
    bucket: 'sandbox_ops',
    inFlight: 'archives',
    params: FileParams,
    query: ArchiveQuery,
    requestHeaders: [{ name: 'Accept', description: 'application/gzip for tar.gz; application/x-tar (the default) for tar' }],
    responses: {
      200: {
        description:
          'The archive. Should the sandbox fail to read it to the end, the response is cut off, never ended as if whole. While other accounts transfer archives on the same ' +
          'server, the account\'s transfers share it fairly with theirs: each account has as many flowing at once, the others waiting their turn (PADDOCK_BULK_TURN_MS)',
        schema: ArchiveDownload,
        contentType: TAR,
        alternatives: [{ contentType: GZIP, schema: ArchiveDownload }],
      },
    },
    errors: [...COMMON_ERRORS, 'file_not_found', 'not_a_directory', 'not_acceptable'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    const type = ctx.accepts(TAR, GZIP);
    if (!type) throw new ApiError('not_acceptable', `The archive is sent as ${TAR} or ${GZIP}.`);
    const gone = abortOnDisconnect(ctx);
    const { stream, complete } = await openArchive(deps, accountIdOf(ctx), sandboxId, query.path, type === GZIP, gone.signal);
    void complete.then((whole) => {
      if (!whole) ctx.res.destroy();
    });
    const name = query.path === '/' ? 'root' : query.path.slice(query.path.lastIndexOf('/') + 1);
    ctx.status = 200;
    ctx.type = type;
    ctx.attachment(`${name}${type === GZIP ? '.tar.gz' : '.tar'}`);
    // Sent only while the request's key is confirmed; a revocation cuts it off (auth/key-sessions.ts).
    ctx.body = ctx.state.session ? stream.pipe(confirmedStream(ctx.state.session)) : stream;
  },
);

export const uploadArchiveRoute = route(
  {
    method: 'put',
    path: '/v1/sandboxes/:id/files/archive',
    operationId: 'uploadArchive',
    summary: 'Extract a tar or tar.gz archive under a directory (created when missing), streamed as it arrives',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:write',
    bucket: 'sandbox_ops',
    inFlight: 'archives',
    params: FileParams,
    query: ArchiveQuery,
    streamedBody: {
      mediaTypes: ARCHIVE_MEDIA_TYPES,
      limitBytes: (config) => config.PADDOCK_ARCHIVE_MAX_BYTES,
      description:
        'A tar archive (application/x-tar) or a gzip-compressed one (application/gzip), at most PADDOCK_ARCHIVE_MAX_BYTES as sent. ' +
        'Members with `..` or absolute names, device nodes, and links that would lead out are refused (422 invalid_archive). ' +
        'Only /workspace, /tmp and /dev/shm are writable: a directory elsewhere answers 403 permission_denied. ' +
        'A failed upload is never a partial success: a directory it created is removed; in one that existed, members extracted before the failure stay. ' +
        'The body is read at the account\'s fair share of the server\'s archive transfers, as downloads are sent.',
    },
    responses: { 201: { description: 'Extracted', schema: ExtractedArchiveResponse } },
    errors: [...COMMON_ERRORS, 'not_a_directory', 'invalid_archive', 'insufficient_storage'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    const extracted = await extractArchive(deps, accountIdOf(ctx), sandboxId, query.path, ctx.state.streamedBody!);
    ctx.status = 201;
    ctx.body = presentExtractedArchive(extracted);
  },
);

export const removePathRoute = route(
  {
    method: 'delete',
    path: '/v1/sandboxes/:id/files',
    operationId: 'removePath',
    summary: 'Remove a file, a symlink (never what it points at), or a directory: an empty one, or with everything in it when recursive',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:write',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    query: RemovePathQuery,
    responses: { 204: { description: 'Removed' } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'not_a_directory', 'directory_not_empty'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    await removePath(deps, sandboxId, query.path, query.recursive);
    ctx.status = 204;
  },
);

export const movePathRoute = route(
  {
    method: 'post',
    path: '/v1/sandboxes/:id/files/move',
    operationId: 'movePath',
    summary: 'Move (rename) a file, symlink or directory to a new name, making its parent directories',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:write',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    body: MovePathBody,
    responses: { 200: { description: 'Moved: the new name', schema: PathResponse } },
    errors: [...COMMON_ERRORS, 'insufficient_storage', 'file_not_found', 'file_exists', 'is_a_directory', 'not_a_directory', 'directory_not_empty'],
  },
  async (ctx, { params, body }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    ctx.body = await movePath(deps, sandboxId, body.from, body.to, body.overwrite);
  },
);

export const makeDirRoute = route(
  {
    method: 'post',
    path: '/v1/sandboxes/:id/files/mkdir',
    operationId: 'makeDir',
    summary: 'Make a directory and its parents; one that exists already is success',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:write',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    query: MakeDirQuery,
    responses: { 201: { description: 'The directory is there', schema: PathResponse } },
    errors: [...COMMON_ERRORS, 'insufficient_storage', 'file_exists', 'not_a_directory'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    ctx.status = 201;
    ctx.body = await makeDir(deps, sandboxId, query.path);
  },
);

export const statPathRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files/stat',
    operationId: 'statPath',
    summary: 'Describe a path: its type, size, mode and modification time (a final symlink is described, not followed)',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:read',
    bucket: 'sandbox_ops',
    inFlight: 'files',
    params: FileParams,
    query: PathQuery,
    responses: { 200: { description: 'What is at the path', schema: FileStatResponse } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'not_a_directory'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    ctx.body = presentFileStat(await statPath(deps, sandboxId, query.path));
  },
);

const OCTETS = 'application/octet-stream';

export const readRawRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files/raw',
    operationId: 'readRaw',
    summary: "Download a file's bytes as they are, or one range of them (Range: bytes=…), streamed as they are read",
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:read',
    bucket: 'sandbox_ops',
    inFlight: 'archives',
    params: FileParams,
    query: PathQuery,
    requestHeaders: [
      { name: 'Range', description: 'One byte range (`bytes=0-99`, `bytes=100-`, `bytes=-100`): answered 206; several ranges, or a malformed one, are answered with the whole file' },
    ],
    responses: {
      200: {
        description:
          'The whole file. Should the sandbox fail to read it to the end, the response is cut off, never ended as if whole. ' +
          "It is sent at the account's fair share of the server's transfers, as archives are",
        schema: RawFileDownload,
        contentType: OCTETS,
        headers: { 'Accept-Ranges': 'bytes' },
      },
      206: {
        description: 'The range asked for',
        schema: RawFileDownload,
        contentType: OCTETS,
        headers: { 'Content-Range': 'bytes FIRST-LAST/SIZE', 'Accept-Ranges': 'bytes' },
      },
    },
    errors: [...COMMON_ERRORS, 'file_not_found', 'is_a_directory', 'not_a_directory', 'range_not_satisfiable'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    const range = parseRange(ctx.get('range') || undefined);
    const gone = abortOnDisconnect(ctx);
    const read = await openRaw(deps, accountIdOf(ctx), sandboxId, query.path, range, gone.signal);
    if (range && !read.range) {
      read.stream.destroy();
      throw new ApiError('range_not_satisfiable', `The range asked for is not within ${JSON.stringify(query.path)}, which is ${read.size} bytes.`, {
        headers: { 'Content-Range': `bytes */${read.size}` },
        extra: { size: read.size },
      });
    }
    void read.complete.then((whole) => {
      if (!whole) ctx.res.destroy();
    });
    ctx.set('Accept-Ranges', 'bytes');
    ctx.type = OCTETS;
    if (range && read.range) {
      ctx.status = 206;
      ctx.set('Content-Range', `bytes ${read.range.start}-${read.range.end}/${read.size}`);
    } else {
      ctx.status = 200;
    }
    // Sent only while the request's key is confirmed; a revocation cuts it off (auth/key-sessions.ts).
    ctx.body = ctx.state.session ? read.stream.pipe(confirmedStream(ctx.state.session)) : read.stream;
    ctx.length = read.range ? read.range.end - read.range.start + 1 : 0;
  },
);

export const writeRawRoute = route(
  {
    method: 'put',
    path: '/v1/sandboxes/:id/files/raw',
    operationId: 'writeRaw',
    summary: 'Write a file from the request body as it is (any bytes), streamed as it arrives, creating its parent directories',
    tag: 'files',
    auth: 'apiKey',
    scope: 'files:write',
    bucket: 'sandbox_ops',
    inFlight: 'archives',
    params: FileParams,
    query: RawWriteQuery,
    streamedBody: {
      mediaTypes: [ANY_MEDIA_TYPE],
      limitBytes: (config) => config.PADDOCK_ARCHIVE_MAX_BYTES,
      description:
        "The file's bytes, of any media type, at most PADDOCK_ARCHIVE_MAX_BYTES, and as many as the sandbox's disk has room for (past it 507 insufficient_storage). " +
        'The file is replaced only once the body is whole: a body cut short, too large, or too large for the disk leaves the path as it was and nothing else behind. ' +
        "The body is read at the account's fair share of the server's transfers, as archives are.",
    },
    responses: { 201: { description: 'Written', schema: WrittenFileResponse } },
    errors: [...COMMON_ERRORS, ...WRITE_ERRORS, 'file_exists', 'is_a_directory', 'not_a_directory'],
  },
  async (ctx, { params, query }, deps) => {
    const { id: sandboxId } = await deps.sandboxes.running(accountIdOf(ctx), params.id, 'files');
    const written = await writeRaw(deps, accountIdOf(ctx), sandboxId, query.path, ctx.state.streamedBody!, query.overwrite);
    ctx.status = 201;
    ctx.body = presentWrittenFile(written);
  },
);

export const fileRoutes: Route[] = [
  viewFileRoute,
  createFileRoute,
  editFileRoute,
  listFilesRoute,
  globRoute,
  grepRoute,
  downloadArchiveRoute,
  uploadArchiveRoute,
  removePathRoute,
  movePathRoute,
  makeDirRoute,
  statPathRoute,
  readRawRoute,
  writeRawRoute,
];
