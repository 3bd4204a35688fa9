import { ApiError } from '../../../shared/errors.ts';
import type { AppContext, AppDeps } from '../../context.ts';
import { presentExitLine, presentProcess } from '../../presenters/process.ts';
import { startNdjsonAnswer } from '../../services/exec/ndjson.ts';
import { findProcess, listProcesses, signalProcess, streamOutput, writeStdin } from '../../services/processes/index.ts';
import { accountIdOf, route } from '../route.ts';
import { OutputQuery, ProcessList, ProcessOutputLine, ProcessParams, SandboxParams, SignalQuery, StdinBody } from './schema.ts';

const NDJSON = 'application/x-ndjson';
const COMMON = { tag: 'processes', auth: 'apiKey', scope: 'exec', bucket: 'sandbox_ops', inFlight: 'exec' } as const;
const ERRORS = ['sandbox_not_found', 'sandbox_not_running', 'operation_timed_out'] as const;

/** The caller's running sandbox: another account's is a 404 like a missing one. */
async function ownRunningSandbox(ctx: AppContext, id: string, deps: AppDeps) {
  return deps.sandboxes.running(accountIdOf(ctx), id, 'processes');
}

export const listProcessesRoute = route(
  {
    ...COMMON,
    method: 'get',
    path: '/v1/sandboxes/:id/processes',
    operationId: 'listProcesses',
    summary: 'The background processes of the sandbox: those running and the most recent ones that ended',
    params: SandboxParams,
    responses: { 200: { description: 'Oldest first', schema: ProcessList } },
    errors: [...ERRORS],
  },
  async (ctx, { params }, deps) => {
    const sandbox = await ownRunningSandbox(ctx, params.id, deps);
    ctx.body = { data: (await listProcesses(deps, sandbox)).map(presentProcess) };
  },
);

export const processOutputRoute = route(
  {
    ...COMMON,
    method: 'get',
    path: '/v1/sandboxes/:id/processes/:procId/output',
    operationId: 'getProcessOutput',
    summary: 'The kept output of a background process as NDJSON (as a streamed exec), an exit line last once it has ended; follow=true waits for more until it ends',
    params: ProcessParams,
    query: OutputQuery,
    responses: { 200: { description: 'One JSON object a line', contentType: NDJSON, schema: ProcessOutputLine } },
    errors: [...ERRORS, 'process_not_found'],
  },
  async (ctx, { params, query }, deps) => {
    const sandbox = await ownRunningSandbox(ctx, params.id, deps);
    const record = await findProcess(deps, sandbox, params.procId);
    const { line, end, abort } = startNdjsonAnswer(ctx, deps.config.PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS * 1000);
    const sink = { stdout: (data: string) => line({ type: 'stdout', data }), stderr: (data: string) => line({ type: 'stderr', data }) };
    streamOutput(deps, sandbox, record, query.follow, sink, abort.signal)
      .then((ended) => void (ended && line(presentExitLine(ended))))
      .catch((err: unknown) => {
        // Headers are gone: the failure travels as the stream's last line.
        const e = err instanceof ApiError ? err : new ApiError('internal_error', 'The output could not be read.');
        if (!(err instanceof ApiError)) deps.log.error({ err, requestId: ctx.state.requestId }, 'process output failed');
        void line({ type: 'error', code: e.code, detail: e.message });
      })
      .finally(end);
  },
);

export const processStdinRoute = route(
  {
    ...COMMON,
    method: 'post',
    path: '/v1/sandboxes/:id/processes/:procId/stdin',
    operationId: 'writeProcessStdin',
    summary: "Write to a background process's standard input; answers once the process has taken it (up to 30 s)",
    params: ProcessParams,
    body: StdinBody,
    bodyLimitBytes: (config) => config.PADDOCK_FILE_MAX_BYTES + 256 * 1024,
    bodyLargeField: 'data',
    responses: { 204: { description: 'Written' } },
    errors: [...ERRORS, 'process_not_found', 'process_not_running'],
  },
  async (ctx, { params, body }, deps) => {
    const sandbox = await ownRunningSandbox(ctx, params.id, deps);
    await writeStdin(deps, sandbox, params.procId, body.data);
    ctx.status = 204;
  },
);

export const signalProcessRoute = route(
  {
    ...COMMON,
    method: 'delete',
    path: '/v1/sandboxes/:id/processes/:procId',
    operationId: 'stopProcess',
    summary: "Signal a background process's process group (TERM by default, or KILL); a process that has ended is left as it is",
    params: ProcessParams,
    query: SignalQuery,
    responses: { 204: { description: 'Signalled (answered once it has ended, or after 2 s when it has not)' } },
    errors: [...ERRORS, 'process_not_found'],
  },
  async (ctx, { params, query }, deps) => {
    const sandbox = await ownRunningSandbox(ctx, params.id, deps);
    await signalProcess(deps, sandbox, params.procId, query.signal);
    ctx.status = 204;
  },
);

export const processRoutes = [listProcessesRoute, processOutputRoute, processStdinRoute, signalProcessRoute];
