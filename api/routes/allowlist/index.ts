import { clearAllowlist, getAllowlist, putAllowlist, type Allowlist as AllowlistRow } from '../../../shared/repositories/policy.ts';
import { accountIdOf, route } from '../route.ts';
import { AllowlistBody, AllowlistResponse } from './schema.ts';


function present(row: AllowlistRow) {
  return { commands: row.commands, updatedAt: row.updatedAt?.toISOString() ?? null };
}

export const getAllowlistRoute = route(
  {
    method: 'get',
    path: '/v1/allowlist',
    operationId: 'getAllowlist',
    summary: "The account's command allowlist",
    tag: 'allowlist',
    auth: 'apiKey',
    bucket: 'account',
    scope: 'sandboxes:read',
    responses: { 200: { description: 'The allowlist', schema: AllowlistResponse } },
    errors: [],
  },
  async (ctx, _input, deps) => {
    ctx.body = present(await getAllowlist(deps.pg, accountIdOf(ctx)));
  },
);

export const putAllowlistRoute = route(
  {
    method: 'put',
    path: '/v1/allowlist',
    operationId: 'setAllowlist',
    summary: 'Replace the allowlist: every exec is then checked, with a shell parser, before anything runs',
    tag: 'allowlist',
    auth: 'apiKey',
    bucket: 'account',
    scope: 'allowlist:write',
    body: AllowlistBody,
    responses: { 200: { description: 'The new allowlist', schema: AllowlistResponse } },
    errors: [],
  },
  async (ctx, { body }, deps) => {
    const allowlist = await putAllowlist(deps.pg, accountIdOf(ctx), body.commands);
    // Execs read the policy from a view of the account's (api/services/sandboxes.ts): stale once this is answered.
    await deps.events.changed([accountIdOf(ctx)]);
    ctx.body = present(allowlist);
  },
);

export const clearAllowlistRoute = route(
  {
    method: 'delete',
    path: '/v1/allowlist',
    operationId: 'clearAllowlist',
    summary: 'Clear the allowlist: every command is allowed again',
    tag: 'allowlist',
    auth: 'apiKey',
    bucket: 'account',
    scope: 'allowlist:write',
    responses: { 204: { description: 'Cleared' } },
    errors: [],
  },
  async (ctx, _input, deps) => {
    await clearAllowlist(deps.pg, accountIdOf(ctx));
    // Execs read the policy from a view of the account's (api/services/sandboxes.ts): stale once this is answered.
    await deps.events.changed([accountIdOf(ctx)]);
    ctx.status = 204;
  },
);

export const allowlistRoutes = [getAllowlistRoute, putAllowlistRoute, clearAllowlistRoute];
