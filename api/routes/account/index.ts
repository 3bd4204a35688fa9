import { ApiError } from '../../../shared/errors.ts';
import { Account } from '../../../shared/db/entities.ts';
import { presentAccount } from '../../presenters/account.ts';
import { usageOf } from '../../services/account-usage.ts';
import { accountIdOf, route } from '../route.ts';
import { AccountResponse } from './schema.ts';

export const getAccount = route(
  {
    method: 'get',
    path: '/v1/account',
    summary: 'The account, its usage this month and its limits',
    tag: 'account',
    auth: 'apiKey',
    responses: { 200: { description: 'The account', schema: AccountResponse } },
    errors: ['missing_credential', 'invalid_credential', 'wrong_credential_type', 'invalid_request'],
  },
  async (ctx, _input, deps) => {
    const account = await ctx.state.em.findOne(Account, { id: accountIdOf(ctx) });
    if (!account) throw new ApiError('invalid_credential');
    ctx.body = presentAccount(account, await usageOf(ctx.state.em, account, deps.config));
  },
);

export const accountRoutes = [getAccount];
