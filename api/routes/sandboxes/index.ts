import { ApiError } from '../../../shared/errors.ts';
import { hasScope, requireScopeFor } from '../../middleware/authenticate.ts';
import { presentSandbox } from '../../../shared/sandboxes/present.ts';
import { listOwnSandboxes, presentedOwnSandbox } from '../../services/sandboxes.ts';
import { parseInput } from '../../middleware/validate.ts';
import { accountIdOf, route } from '../route.ts';
import {
  CreateSandboxBody,
  CreateSandboxQuery,
  DestroySandboxQuery,
  IdempotencyKey,
  ListSandboxesQuery,
  SandboxList,
  SandboxObject,
  SandboxParams,
  SetTimeoutBody,
} from './schema.ts';
import { NetworkPolicy } from '../../../shared/network/policy.ts';


export const createSandboxRoute = route(
  {
    method: 'post',
    path: '/v1/sandboxes',
    operationId: 'createSandbox',
    summary: 'Create a sandbox (checks the concurrent cap, then the monthly cap); Idempotency-Key makes retries safe',
    tag: 'sandboxes',
    auth: 'apiKey',
    scope: 'sandboxes:write',
    bucket: 'sandbox_lifecycle',
    body: CreateSandboxBody,
    query: CreateSandboxQuery,
    requestHeaders: [
      { name: 'Idempotency-Key', description: 'Any unique text (up to 255 characters): a retry with the same key and body answers the first sandbox instead of making a second' },
    ],
    responses: {
      201: { description: 'The sandbox: running or failed, or pending with ?wait=false', schema: SandboxObject, headers: { Location: 'The sandbox: /v1/sandboxes/{id}' } },
    },
    errors: [
      'image_not_allowed',
      'image_not_supported',
      'command_not_allowed',
      'idempotency_key_reused',
      'idempotency_conflict',
      'concurrent_sandbox_limit_reached',
      'monthly_usage_limit_reached',
      'snapshot_not_found',
      'snapshot_not_ready',
      'snapshot_corrupt',
      'egress_not_permitted',
    ],
  },
  async (ctx, { body, query }, deps) => {
    const accountId = accountIdOf(ctx);
    // A key that may not take snapshots may not leave one behind either.
    if (body.snapshotOnDestroy) requireScopeFor(ctx, 'snapshots:write', 'snapshotOnDestroy');
    const header = ctx.get('idempotency-key');
    const key = header ? parseInput(IdempotencyKey, header, 'header') : undefined;
    const network = { mayOpen: hasScope(ctx, 'network:write') };
    const { sandbox } = await deps.sandboxes.create(accountId, body, { idempotencyKey: key, wait: query.wait, network }).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 429) deps.metrics.quotaRefusals.inc({ code: err.code });
      throw err;
    });
    ctx.status = 201;
    ctx.set('Location', `/v1/sandboxes/${sandbox.id}`);
    ctx.body = presentSandbox(sandbox);
  },
);

export const listSandboxes = route(
  {
    method: 'get',
    path: '/v1/sandboxes',
    operationId: 'listSandboxes',
    summary: "List the account's sandboxes, newest first, a page at a time (pass a page's next as ?after= for the following one)",
    tag: 'sandboxes',
    auth: 'apiKey',
    scope: 'sandboxes:read',
    query: ListSandboxesQuery,
    responses: { 200: { description: 'Sandboxes', schema: SandboxList } },
    errors: ['sandbox_not_found'],
  },
  async (ctx, { query }, deps) => {
    const page = await listOwnSandboxes(deps.pg, accountIdOf(ctx), query);
    ctx.body = { data: page.sandboxes.map(presentSandbox), next: page.next ?? null };
  },
);

export const getSandbox = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id',
    operationId: 'getSandbox',
    summary: 'Get one sandbox',
    tag: 'sandboxes',
    auth: 'apiKey',
    scope: 'sandboxes:read',
    params: SandboxParams,
    responses: { 200: { description: 'The sandbox', schema: SandboxObject } },
    errors: ['sandbox_not_found'],
  },
  async (ctx, { params }, deps) => {
    ctx.body = await presentedOwnSandbox(deps, accountIdOf(ctx), params.id);
  },
);

export const destroySandboxRoute = route(
  {
    method: 'delete',
    path: '/v1/sandboxes/:id',
    operationId: 'destroySandbox',
    summary: 'Destroy a sandbox; idempotent',
    tag: 'sandboxes',
    auth: 'apiKey',
    scope: 'sandboxes:write',
    bucket: 'sandbox_lifecycle',
    params: SandboxParams,
    query: DestroySandboxQuery,
    responses: { 200: { description: 'The sandbox: destroyed, or terminating with ?wait=false', schema: SandboxObject } },
    errors: ['sandbox_not_found'],
  },
  async (ctx, { params, query }, deps) => {
    const sandbox = await deps.sandboxes.destroy(accountIdOf(ctx), params.id, { wait: query.wait });
    ctx.body = presentSandbox(sandbox);
  },
);

export const setSandboxTimeoutRoute = route(
  {
    method: 'post',
    path: '/v1/sandboxes/:id/timeout',
    operationId: 'setSandboxTimeout',
    summary: 'Set when the sandbox ends: timeoutSeconds from now, earlier or later than before, never past createdAt + the session cap',
    tag: 'sandboxes',
    auth: 'apiKey',
    scope: 'sandboxes:write',
    bucket: 'sandbox_lifecycle',
    params: SandboxParams,
    body: SetTimeoutBody,
    responses: { 200: { description: 'The sandbox with its new expiresAt', schema: SandboxObject } },
    errors: ['sandbox_not_found', 'sandbox_not_running', 'timeout_past_cap'],
  },
  async (ctx, { params, body }, deps) => {
    const sandbox = await deps.sandboxes.setTimeout(accountIdOf(ctx), params.id, body.timeoutSeconds);
    ctx.body = presentSandbox(sandbox);
  },
);

export const setSandboxNetworkRoute = route(
  {
    method: 'patch',
    path: '/v1/sandboxes/:id/network',
    operationId: 'setSandboxNetwork',
    summary: "Change a running sandbox's egress policy: connections it opens from now on follow it (a policy other than the default needs network:write)",
    tag: 'sandboxes',
    auth: 'apiKey',
    scope: 'sandboxes:write',
    bucket: 'sandbox_lifecycle',
    params: SandboxParams,
    body: NetworkPolicy,
    responses: { 200: { description: 'The sandbox with its new network', schema: SandboxObject } },
    errors: ['sandbox_not_found', 'sandbox_not_running', 'egress_not_permitted'],
  },
  async (ctx, { params, body }, deps) => {
    const sandbox = await deps.sandboxes.setNetwork(accountIdOf(ctx), params.id, body, { mayOpen: hasScope(ctx, 'network:write') });
    ctx.body = presentSandbox(sandbox);
  },
);

export const sandboxRoutes = [createSandboxRoute, listSandboxes, getSandbox, destroySandboxRoute, setSandboxTimeoutRoute, setSandboxNetworkRoute];

