import { ApiError } from '../../../shared/errors.ts';
import { activeApiKeys, insertApiKey } from '../../../shared/repositories/api-keys.ts';
import { isId, newId } from '../../../shared/ids.ts';
import { SCOPES } from '../../../shared/scopes.ts';
import { generateApiKey, hashApiKey, keyStart } from '../../auth/api-key-format.ts';
import { presentApiKey, presentCreatedApiKey } from '../../presenters/api-key.ts';
import { accountIdOf, route } from '../route.ts';
import { ApiKeyList, ApiKeyParams, CreateApiKeyBody, CreatedApiKey } from './schema.ts';


export const createApiKey = route(
  {
    method: 'post',
    path: '/v1/api-keys',
    operationId: 'createApiKey',
    summary: 'Create an API key (dashboard session token only); the raw key is answered once',
    tag: 'api-keys',
    auth: 'dashboard',
    bucket: 'account',
    body: CreateApiKeyBody,
    responses: { 201: { description: 'Key created', schema: CreatedApiKey } },
    errors: [],
  },
  async (ctx, { body }) => {
    const rawKey = generateApiKey();
    const key = await insertApiKey(ctx.state.em, {
      id: newId('key'),
      accountId: accountIdOf(ctx),
      name: body.name ?? 'default',
      keyHash: hashApiKey(rawKey),
      start: keyStart(rawKey),
      createdAt: new Date(),
      // Stored in the canonical order, each once; without a list, null: every scope, now and later.
      scopes: body.scopes ? SCOPES.filter((s) => body.scopes!.includes(s)) : null,
    });
    // A session token can outlive its account: it is then a credential for nothing.
    if (!key) throw new ApiError('invalid_credential');
    ctx.status = 201;
    ctx.body = presentCreatedApiKey(key, rawKey);
  },
);

export const listApiKeys = route(
  {
    method: 'get',
    path: '/v1/api-keys',
    operationId: 'listApiKeys',
    summary: "List the account's active API keys (never the keys themselves)",
    tag: 'api-keys',
    auth: 'dashboard',
    bucket: 'account',
    responses: { 200: { description: 'Active keys, newest first', schema: ApiKeyList } },
    errors: [],
  },
  async (ctx) => {
    const keys = await activeApiKeys(ctx.state.em, accountIdOf(ctx));
    ctx.body = { data: keys.map(presentApiKey) };
  },
);

export const revokeApiKey = route(
  {
    method: 'delete',
    path: '/v1/api-keys/:keyId',
    operationId: 'revokeApiKey',
    summary:
      "Revoke an API key: it stops working at once on every replica, and every request it has open ends before this answers (a terminal closes with 4003, an event stream ends, a streamed exec's or followed output's last line is an invalid_credential error, any other answer not yet sent is a 401 or a closed connection): nothing more reaches its holder",
    tag: 'api-keys',
    auth: 'dashboard',
    bucket: 'account',
    params: ApiKeyParams,
    responses: { 204: { description: 'Revoked (also when it already was)' } },
    errors: ['api_key_not_found'],
  },
  async (ctx, { params }, deps) => {
    // An id we never issue is unknown without a query (PostgreSQL refuses some strings, such as NUL).
    const keyHash = isId('key', params.keyId) ? await deps.apiKeys.revoke(ctx.state.em, accountIdOf(ctx), params.keyId) : undefined;
    if (!keyHash) throw new ApiError('api_key_not_found');
    await deps.keySessions.revoked(keyHash);
    ctx.status = 204;
  },
);

export const apiKeyRoutes = [createApiKey, listApiKeys, revokeApiKey];
