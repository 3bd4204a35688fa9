import { z } from 'zod';
import { email, timestamp } from '../common-schemas.ts';

export const SignupBody = z.strictObject({
  email,
  password: z
    .string()
    .min(10, { error: 'must be at least 10 characters' })
    .max(1024, { error: 'must be at most 1024 characters' }),
});

export const LoginBody = z.strictObject({
  email,
  password: z.string().min(1).max(1024),
});

export const AccountSummary = z.object({ id: z.string(), email: z.string(), createdAt: timestamp });

export const SessionToken = z.object({
  token: z.string().meta({ description: 'Dashboard session token (JWT); accepted by /v1/api-keys routes only' }),
  expiresAt: timestamp,
});

export const SignupResponse = z.object({ account: AccountSummary, token: z.string(), expiresAt: timestamp });
