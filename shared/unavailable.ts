import { ConnectionException } from '@mikro-orm/core';

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);
// Connection failures, shutdowns and "too many connections". Not 08P01 (protocol violation):
// PostgreSQL also answers it to a parameter holding a NUL byte, which is the client's fault.
const PG_UNAVAILABLE = /^(08000|08001|08003|08004|08006|57P01|57P02|57P03|53300)$/;
const MESSAGES = [
  "Stream isn't writeable",
  'Connection is closed',
  'Command timed out',
  'Reached the max retries per request limit',
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Connection ended unexpectedly',
];

/**
 * True when the error means PostgreSQL or Redis cannot be reached right now: the request should
 * be answered 503 with Retry-After, not 500, because trying again later will work.
 */
export function isDependencyUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    if (e instanceof ConnectionException) return true;
    if (typeof e !== 'object') return false;
    const { code, message, name } = e as { code?: unknown; message?: unknown; name?: unknown };
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || PG_UNAVAILABLE.test(code))) return true;
    if (name === 'MaxRetriesPerRequestError') return true;
    if (typeof message === 'string' && MESSAGES.some((m) => message.includes(m))) return true;
    if (e instanceof AggregateError && e.errors.some((inner) => isDependencyUnavailable(inner))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
