import type { ErrorCode } from '../../../shared/errors.ts';
import type { AppDeps } from '../../context.ts';
import { presentEdit, presentFileView, presentGlob, presentGrep, presentListing, presentWrittenFile } from '../../presenters/file.ts';
import { editFile } from '../../services/files/edit.ts';
import { globFiles } from '../../services/files/glob.ts';
import { grepFiles } from '../../services/files/grep.ts';
import { listDirectory } from '../../services/files/list.ts';
import { runningSandboxId } from '../../services/files/sandbox.ts';
import { viewFile } from '../../services/files/view.ts';
import { writeFileBytes } from '../../services/files/write.ts';
import { accountIdOf, route, type Route } from '../route.ts';
import {
  CreateFileBody,
  CreateFileQuery,
  EditFileBody,
  EditFileQuery,
  EditResponse,
  FileParams,
  FileViewResponse,
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

const COMMON_ERRORS: ErrorCode[] = [
  'missing_credential',
  'invalid_credential',
  'wrong_credential_type',
  'invalid_request',
  'rate_limited',
  'sandbox_not_found',
  'sandbox_not_running',
  'permission_denied',
  'not_a_regular_file',
  'operation_timed_out',
];
const WRITE_ERRORS: ErrorCode[] = ['invalid_json', 'payload_too_large', 'unsupported_media_type', 'file_too_large'];

/** The body carries up to the file limit as base64 (4/3 of it), plus room for JSON. */
const fileBodyLimit = (deps: AppDeps) => Math.ceil((deps.config.PADDOCK_FILE_MAX_BYTES * 4) / 3) + 65536;

export const viewFileRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files',
    summary: 'View a file, or a range of its lines; `content` for UTF-8, else `contentBase64`',
    tag: 'files',
    auth: 'apiKey',
    bucket: 'sandbox_ops',
    params: FileParams,
    query: ViewFileQuery,
    responses: { 200: { description: 'The lines asked for', schema: FileViewResponse } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'is_a_directory', 'not_a_directory', 'file_too_large'],
  },
  async (ctx, { params, query }, deps) => {
    const sandboxId = await runningSandboxId(deps.pg, accountIdOf(ctx), params.id);
    ctx.body = presentFileView(await viewFile(deps, sandboxId, query));
  },
);

export const createFileRoute = route(
  {
    method: 'put',
    path: '/v1/sandboxes/:id/files',
    summary: 'Create or replace a file atomically, creating its parent directories',
    tag: 'files',
    auth: 'apiKey',
    bucket: 'sandbox_ops',
    params: FileParams,
    query: CreateFileQuery,
    body: CreateFileBody,
    bodyLimitBytes: fileBodyLimit,
    responses: { 201: { description: 'Written', schema: WrittenFileResponse } },
    errors: [...COMMON_ERRORS, ...WRITE_ERRORS, 'file_exists', 'is_a_directory', 'not_a_directory'],
  },
  async (ctx, { params, query, body }, deps) => {
    const sandboxId = await runningSandboxId(deps.pg, accountIdOf(ctx), params.id);
    const bytes = body.content !== undefined ? Buffer.from(body.content, 'utf8') : Buffer.from(body.contentBase64 ?? '', 'base64');
    ctx.status = 201;
    ctx.body = presentWrittenFile(await writeFileBytes(deps, sandboxId, query.path, bytes, query.overwrite));
  },
);

export const editFileRoute = route(
  {
    method: 'patch',
    path: '/v1/sandboxes/:id/files',
    summary: 'Replace an exact occurrence of a text in a file (or every one, with replaceAll)',
    tag: 'files',
    auth: 'apiKey',
    bucket: 'sandbox_ops',
    params: FileParams,
    query: EditFileQuery,
    body: EditFileBody,
    bodyLimitBytes: fileBodyLimit,
    responses: { 200: { description: 'Edited', schema: EditResponse } },
    errors: [
      ...COMMON_ERRORS,
      ...WRITE_ERRORS,
      'file_not_found',
      'is_a_directory',
      'not_a_directory',
      'edit_no_match',
      'edit_ambiguous',
    ],
  },
  async (ctx, { params, query, body }, deps) => {
    const sandboxId = await runningSandboxId(deps.pg, accountIdOf(ctx), params.id);
    ctx.body = presentEdit(await editFile(deps, sandboxId, { path: query.path, ...body }));
  },
);

export const listFilesRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files/ls',
    summary: 'List a directory (symlinks are listed, not followed), sorted by name',
    tag: 'files',
    auth: 'apiKey',
    bucket: 'sandbox_ops',
    params: FileParams,
    query: ListFilesQuery,
    responses: { 200: { description: 'The entries', schema: ListingResponse } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'not_a_directory'],
  },
  async (ctx, { params, query }, deps) => {
    const sandboxId = await runningSandboxId(deps.pg, accountIdOf(ctx), params.id);
    ctx.body = presentListing(await listDirectory(deps, sandboxId, query.path));
  },
);

export const globRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files/glob',
    summary: 'Find paths matching a glob (`**` across directories)',
    tag: 'files',
    auth: 'apiKey',
    bucket: 'sandbox_ops',
    params: FileParams,
    query: GlobQuery,
    responses: { 200: { description: 'The matching paths', schema: GlobResponse } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'not_a_directory'],
  },
  async (ctx, { params, query }, deps) => {
    const sandboxId = await runningSandboxId(deps.pg, accountIdOf(ctx), params.id);
    ctx.body = presentGlob(await globFiles(deps, sandboxId, query));
  },
);

export const grepRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/files/grep',
    summary: 'Search file contents with a POSIX extended regular expression',
    tag: 'files',
    auth: 'apiKey',
    bucket: 'sandbox_ops',
    params: FileParams,
    query: GrepQuery,
    responses: { 200: { description: 'The matching lines', schema: GrepResponse } },
    errors: [...COMMON_ERRORS, 'file_not_found', 'not_a_directory'],
  },
  async (ctx, { params, query }, deps) => {
    const sandboxId = await runningSandboxId(deps.pg, accountIdOf(ctx), params.id);
    ctx.body = presentGrep(await grepFiles(deps, sandboxId, query));
  },
);

export const fileRoutes: Route[] = [viewFileRoute, createFileRoute, editFileRoute, listFilesRoute, globRoute, grepRoute];
