import type { z } from 'zod';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';

export const INPUT_ERRORS: readonly ErrorCode[] = ['invalid_request'];

export type Location = 'body' | 'query' | 'path' | 'header';

/** Parses one part of the request, turning schema violations into 400 invalid_request. */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, location: Location): z.output<T> {
  const reserved = reservedKeyPath(value);
  if (reserved) {
    const field = reserved.join('.');
    throw new ApiError('invalid_request', `${location}.${field}: "__proto__" is not an accepted name`, {
      extra: { errors: [{ location, field, message: '"__proto__" is not an accepted name' }] },
    });
  }
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = result.error.issues.slice(0, 20).map((issue) => {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = [...issue.path.map(String), ...(keys.length === 1 ? keys : [])].map(shortened).join('.');
    // A record's bad key: zod's own message ("Invalid key in record") says nothing of what is wrong with it.
    const inner = issue.code === 'invalid_key' ? issue.issues[0]?.message : undefined;
    return { location, field: path || null, message: inner ? `the name is not accepted: ${inner}` : issue.message };
  });
  const first = errors[0]!;
  const where = first.field ? `${location}.${first.field}` : location;
  throw new ApiError('invalid_request', `${where}: ${first.message}`, { extra: { errors } });
}

// A name sent back in an error is cut to this: one of 100 kB says nothing more than its start.
const MAX_NAME_ECHOED = 40;

function shortened(name: string): string {
  return name.length <= MAX_NAME_ECHOED ? name : `${name.slice(0, MAX_NAME_ECHOED)}…`;
}

/**
 * The path of the first "__proto__" key in a parsed JSON value. zod drops such keys from records
 * (metadata, env) without a word, and a strict object reports them only at its own level; this
 * refuses them wherever they are. Iterative: a body may be nested hundreds of thousands deep.
 */
interface Node {
  value: unknown;
  key: string;
  parent?: Node;
}

function reservedKeyPath(value: unknown): string[] | undefined {
  const stack: Node[] = [{ value, key: '' }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.value === null || typeof node.value !== 'object') continue;
    for (const key of Object.keys(node.value)) {
      const child: Node = { value: (node.value as Record<string, unknown>)[key], key, parent: node };
      if (key === '__proto__') {
        const path: string[] = [];
        for (let n: Node | undefined = child; n?.parent; n = n.parent) path.unshift(n.key);
        return path;
      }
      stack.push(child);
    }
  }
  return undefined;
}
