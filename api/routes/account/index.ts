import { ApiError } from '../../../shared/errors.ts';
import { presentAccount } from '../../presenters/account.ts';
import { accountWithUsage } from '../../services/account-usage.ts';
import { accountIdOf, route } from '../route.ts';
import { AccountResponse } from './schema.ts';

export const getAccount = route(
  {
    method: 'get',
    path: '/v1/account',
    operationId: 'getAccount',
    summary: 'The account, its usage this month and its limits',
    tag: 'account',
    auth: 'apiKey',
    bucket: 'account',
    scope: 'sandboxes:read',
    responses: { 200: { description: 'The account', schema: AccountResponse } },
    errors: [],
  },
  async (ctx, _input, deps) => {
    const found = await accountWithUsage(deps, accountIdOf(ctx));
    if (!found) throw new ApiError('invalid_credential');
    ctx.body = presentAccount(found, found.usage);
  },
);

export const accountRoutes = [getAccount];
