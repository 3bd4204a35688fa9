import { PassThrough } from 'node:stream';
import { ApiError } from '../../../shared/errors.ts';
import type { AppContext } from '../../context.ts';
import { findOwnSandbox } from '../../services/sandboxes.ts';
import { prepareExec } from '../../services/exec/prepare.ts';
import { runExec } from '../../services/exec/run.ts';
import { accountIdOf, route } from '../route.ts';
import { ExecBody, ExecParams, ExecResult, ExecStreamLine } from './schema.ts';

const NDJSON = 'application/x-ndjson';

export const execRoute = route(
  {
    method: 'post',
    path: '/v1/sandboxes/:id/exec',
    summary: 'Run a command in the sandbox; with Accept: application/x-ndjson the output streams as it is produced',
    tag: 'exec',
    auth: 'apiKey',
    bucket: 'sandbox_ops',
    params: ExecParams,
    body: ExecBody,
    bodyLimitBytes: (deps) => deps.config.PADDOCK_FILE_MAX_BYTES + 256 * 1024,
    responses: {
      200: {
        description: 'The result; or, with Accept: application/x-ndjson, one JSON object a line, the last of type exit',
        schema: ExecResult,
        alternatives: [{ contentType: NDJSON, schema: ExecStreamLine }],
      },
    },
    errors: [
      'missing_credential',
      'invalid_credential',
      'wrong_credential_type',
      'invalid_request',
      'invalid_json',
      'payload_too_large',
      'rate_limited',
      'sandbox_not_found',
      'sandbox_not_running',
      'command_not_allowed',
    ],
  },
  async (ctx, { params, body }, deps) => {
    const sandbox = await findOwnSandbox(deps.pg, accountIdOf(ctx), params.id);
    const prepared = await prepareExec(deps, ctx.state.em, sandbox, body);
    const abort = abortOnDisconnect(ctx);
    if (ctx.accepts('application/json', NDJSON) === NDJSON) {
      const stream = new PassThrough();
      const line = (value: unknown) => stream.write(`${JSON.stringify(value)}\n`);
      ctx.status = 200;
      ctx.type = NDJSON;
      ctx.body = stream;
      runExec(deps, sandbox.id, prepared, { stdout: (data) => line({ type: 'stdout', data }), stderr: (data) => line({ type: 'stderr', data }) }, abort)
        .then((outcome) => line({ type: 'exit', ...outcome }))
        .catch((err: unknown) => {
          // Headers are gone: the failure travels as the stream's last line.
          const e = err instanceof ApiError ? err : new ApiError('internal_error', 'The command could not be run.');
          if (!(err instanceof ApiError)) deps.log.error({ err, requestId: ctx.state.requestId }, 'streamed exec failed');
          line({ type: 'error', code: e.code, detail: e.message });
        })
        .finally(() => stream.end());
      return;
    }
    const stdout: string[] = [];
    const stderr: string[] = [];
    const outcome = await runExec(deps, sandbox.id, prepared, { stdout: (t) => stdout.push(t), stderr: (t) => stderr.push(t) }, abort);
    ctx.body = { ...outcome, stdout: stdout.join(''), stderr: stderr.join('') };
  },
);

/** A client that goes away stops its command: the runtime kills the whole process tree. */
function abortOnDisconnect(ctx: AppContext): AbortSignal {
  const controller = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) controller.abort();
  });
  return controller.signal;
}

export const execRoutes = [execRoute];
