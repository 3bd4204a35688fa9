import { ApiError } from '../../../shared/errors.ts';
import { findAccountByEmail, insertAccount } from '../../../shared/repositories/accounts.ts';
import { newId } from '../../../shared/ids.ts';
import { presentAccountSummary, presentSessionToken } from '../../presenters/account.ts';
import { route } from '../route.ts';
import { LoginBody, SessionToken, SignupBody, SignupResponse } from './schema.ts';

export const signup = route(
  {
    method: 'post',
    path: '/v1/auth/signup',
    operationId: 'signup',
    summary: 'Create an account; answers a dashboard session token',
    tag: 'auth',
    auth: 'none',
    bucket: 'auth',
    body: SignupBody,
    responses: { 201: { description: 'Account created', schema: SignupResponse } },
    errors: ['email_taken'],
  },
  async (ctx, { body }, deps) => {
    const account = await insertAccount(ctx.state.em, {
      id: newId('acct'),
      email: body.email,
      passwordHash: await deps.passwords.hash(body.password),
      createdAt: new Date(),
    });
    if (!account) throw new ApiError('email_taken');
    const issued = deps.tokens.issue(account.id);
    ctx.status = 201;
    ctx.body = { account: presentAccountSummary(account), ...presentSessionToken(issued) };
  },
);

export const login = route(
  {
    method: 'post',
    path: '/v1/auth/login',
    operationId: 'login',
    summary: 'Exchange email and password for a dashboard session token',
    tag: 'auth',
    auth: 'none',
    bucket: 'auth',
    body: LoginBody,
    responses: { 200: { description: 'Logged in', schema: SessionToken } },
    errors: ['invalid_login'],
  },
  async (ctx, { body }, deps) => {
    const account = await findAccountByEmail(ctx.state.em, body.email);
    // Unknown email and wrong password take the same time and give the same answer.
    const ok = await deps.passwords.verify(account?.passwordHash, body.password);
    if (!account || !ok) throw new ApiError('invalid_login');
    ctx.body = presentSessionToken(deps.tokens.issue(account.id));
  },
);

export const authRoutes = [signup, login];
