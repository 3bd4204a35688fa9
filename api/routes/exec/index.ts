import { ApiError } from '../../../shared/errors.ts';
import { execContextView, findOwnSandboxWithPolicy } from '../../services/sandboxes.ts';
import { outputLines, startNdjsonAnswer } from '../../services/exec/ndjson.ts';
import { sendJsonAnswer } from '../../services/exec/json-answer.ts';
import { abortOnDisconnect } from '../../services/streaming.ts';
import { prepareExec } from '../../services/exec/prepare.ts';
import { startProcess } from '../../services/processes/index.ts';
import { presentStarted } from '../../presenters/process.ts';
import { StartedProcess } from '../processes/schema.ts';
import { runExecBytes, STREAM_IDLE_RELEASE_MS } from '../../services/exec/run.ts';
import { accountIdOf, route } from '../route.ts';
import { ExecBody, ExecParams, ExecResult, ExecStreamLine } from './schema.ts';

const NDJSON = 'application/x-ndjson';

export const execRoute = route(
  {
    method: 'post',
    path: '/v1/sandboxes/:id/exec',
    operationId: 'execCommand',
    summary:
      'Run a command in the sandbox; with Accept: application/x-ndjson the output streams as it is produced; with background: true it starts as a background process',
    tag: 'exec',
    auth: 'apiKey',
    scope: 'exec',
    bucket: 'sandbox_ops',
    inFlight: 'exec',
    leasedView: execContextView,
    params: ExecParams,
    body: ExecBody,
    bodyLimitBytes: (config) => config.PADDOCK_FILE_MAX_BYTES + 256 * 1024,
    bodyLargeField: 'stdin',
    responses: {
      200: {
        description: 'The result; or, with Accept: application/x-ndjson, one JSON object a line, the last of type exit',
        schema: ExecResult,
        alternatives: [{ contentType: NDJSON, schema: ExecStreamLine }],
      },
      202: {
        description: 'With background: true, the process started (it outlives the request)',
        schema: StartedProcess,
        headers: { Location: 'The process: /v1/sandboxes/{id}/processes/{procId}' },
      },
    },
    errors: ['sandbox_not_found', 'sandbox_not_running', 'command_not_allowed', 'process_limit_reached', 'operation_timed_out'],
  },
  async (ctx, { params, body }, deps) => {
    const context = await findOwnSandboxWithPolicy(deps, accountIdOf(ctx), params.id, ctx.state.leasedView);
    const { sandbox } = context;
    if (body.background) {
      const { background: _background, ...input } = body;
      const started = await startProcess(deps, context, input);
      ctx.status = 202;
      ctx.set('Location', `/v1/sandboxes/${sandbox.id}/processes/${started.id}`);
      ctx.body = presentStarted(started);
      return;
    }
    const prepared = prepareExec(deps, context, body);
    if (ctx.accepts('application/json', NDJSON) === NDJSON) {
      const { line, write, end, abort } = startNdjsonAnswer(ctx, deps.config.PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS * 1000);
      const [stdout, stderr] = [outputLines('stdout', write), outputLines('stderr', write)];
      runExecBytes(deps, sandbox.id, prepared, { stdout: stdout.chunk, stderr: stderr.chunk }, abort.signal, { idleReleaseMs: STREAM_IDLE_RELEASE_MS })
        .then(async (outcome) => {
          await stdout.end();
          await stderr.end();
          void line({ type: 'exit', ...outcome });
        })
        .catch((err: unknown) => {
          // Headers are gone: the failure travels as the stream's last line.
          const e = err instanceof ApiError ? err : new ApiError('internal_error', 'The command could not be run.');
          if (!(err instanceof ApiError)) deps.log.error({ err, requestId: ctx.state.requestId }, 'streamed exec failed');
          void line({ type: 'error', code: e.code, detail: e.message });
        })
        .finally(end);
      return;
    }
    const abort = abortOnDisconnect(ctx);
    // Held as bytes (outside the JavaScript heap) until the answer is written, decoded as it goes.
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const outcome = await runExecBytes(deps, sandbox.id, prepared, { stdout: (b) => void stdout.push(b), stderr: (b) => void stderr.push(b) }, abort.signal);
    sendJsonAnswer(ctx, { ...outcome }, { stdout, stderr }, deps.config.PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS * 1000);
  },
);

/** A client that goes away stops its command: the runtime kills the whole process tree. */
export const execRoutes = [execRoute];
