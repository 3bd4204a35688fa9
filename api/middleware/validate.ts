import type { z } from 'zod';
import { ApiError } from '../../shared/errors.ts';

export type Location = 'body' | 'query' | 'path' | 'header';

/** Parses one part of the request, turning schema violations into 400 invalid_request. */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, location: Location): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = result.error.issues.slice(0, 20).map((issue) => {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = [...issue.path.map(String), ...(keys.length === 1 ? keys : [])].join('.');
    return { location, field: path || null, message: issue.message };
  });
  const first = errors[0]!;
  const where = first.field ? `${location}.${first.field}` : location;
  throw new ApiError('invalid_request', `${where}: ${first.message}`, { extra: { errors } });
}
