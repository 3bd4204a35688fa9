import { ApiError } from '../../../shared/errors.ts';
import { presentSecret } from '../../presenters/secret.ts';
import { checkScope, putSecret } from '../../services/secrets.ts';
import { rebroker } from '../../../shared/secrets/brokering.ts';
import { deleteSecret, listSecrets } from '../../../shared/repositories/policy.ts';
import { accountIdOf, route } from '../route.ts';
import { ENV_NAME } from '../../../shared/exec/env-names.ts';
import { CreateSecretBody, SecretList, SecretParams, SecretScopeQuery, SecretSummary } from './schema.ts';


export const createSecret = route(
  {
    method: 'post',
    path: '/v1/secrets',
    operationId: 'createSecret',
    summary: "Create or replace a secret, account-wide or for one sandbox: an environment variable of every exec, or with inject a header the sandbox's egress sets on its HTTPS requests to the hosts named",
    tag: 'secrets',
    auth: 'apiKey',
    bucket: 'account',
    scope: 'secrets:write',
    body: CreateSecretBody,
    responses: {
      201: { description: 'Created', schema: SecretSummary },
      200: { description: 'Replaced the value of an existing secret', schema: SecretSummary },
    },
    errors: ['sandbox_not_found', 'sandbox_not_running', 'secret_limit_reached', 'egress_not_permitted'],
  },
  async (ctx, { body }, deps) => {
    const accountId = accountIdOf(ctx);
    if (body.inject && !deps.runtime.egressBrokering) {
      throw new ApiError('egress_not_permitted', `This deployment's ${deps.runtime.name} runtime cannot broker credentials: store the secret without inject to give it to execs as an environment variable.`);
    }
    await checkScope(deps.sandboxes, accountId, body.sandboxId, true);
    const { row, replaced, replacedInject } = await putSecret({ pg: deps.pg, secretCipher: deps.secretCipher, limits: deps.config }, accountId, body);
    if (body.inject || replacedInject) await rebroker(deps, accountId, row.sandbox_id);
    // Execs read the policy from a view of the account's (api/services/sandboxes.ts): stale once this is answered.
    await deps.events.changed([accountId]);
    ctx.status = replaced ? 200 : 201;
    ctx.body = presentSecret(row);
  },
);

export const listSecretsRoute = route(
  {
    method: 'get',
    path: '/v1/secrets',
    operationId: 'listSecrets',
    summary: "List secrets' names and scopes (never values); ?sandboxId= for one sandbox's",
    tag: 'secrets',
    auth: 'apiKey',
    bucket: 'account',
    scope: 'sandboxes:read',
    query: SecretScopeQuery,
    responses: { 200: { description: 'Secrets', schema: SecretList } },
    errors: ['sandbox_not_found'],
  },
  async (ctx, { query }, deps) => {
    const accountId = accountIdOf(ctx);
    await checkScope(deps.sandboxes, accountId, query.sandboxId, false);
    ctx.body = { data: (await listSecrets(deps.pg, accountId, query.sandboxId)).map(presentSecret) };
  },
);

export const deleteSecretRoute = route(
  {
    method: 'delete',
    path: '/v1/secrets/:name',
    operationId: 'deleteSecret',
    summary: 'Remove a secret (account-wide, or with ?sandboxId= the sandbox one)',
    tag: 'secrets',
    auth: 'apiKey',
    bucket: 'account',
    scope: 'secrets:write',
    params: SecretParams,
    query: SecretScopeQuery,
    responses: { 204: { description: 'Removed' } },
    errors: ['secret_not_found', 'sandbox_not_found'],
  },
  async (ctx, { params, query }, deps) => {
    const accountId = accountIdOf(ctx);
    await checkScope(deps.sandboxes, accountId, query.sandboxId, false);
    // A name no secret can have is unknown without a query (PostgreSQL refuses some strings, such as NUL).
    const deleted = ENV_NAME.test(params.name) ? await deleteSecret(deps.pg, accountId, params.name, query.sandboxId) : undefined;
    if (!deleted) {
      throw new ApiError('secret_not_found', `No secret ${params.name}${query.sandboxId ? ` for sandbox ${query.sandboxId}` : ''}.`);
    }
    if (deleted.inject) await rebroker(deps, accountId, query.sandboxId ?? null);
    // Execs read the policy from a view of the account's (api/services/sandboxes.ts): stale once this is answered.
    await deps.events.changed([accountId]);
    ctx.status = 204;
  },
);

export const secretRoutes = [createSecret, listSecretsRoute, deleteSecretRoute];
