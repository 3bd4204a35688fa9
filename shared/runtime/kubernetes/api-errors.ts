import { ApiException } from '@kubernetes/client-node';

/** The HTTP status of a failed API call, or undefined when it never got an answer. */
export function httpStatusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? (err as ApiException<unknown>).code : undefined;
}

/** The `message` of the Status object the API server answered with, when there is one. */
export function statusMessageOf(err: unknown): string | undefined {
  if (!(err instanceof ApiException)) return undefined;
  const body: unknown = (err as ApiException<unknown>).body;
  try {
    const status: unknown = typeof body === 'string' ? JSON.parse(body) : body;
    if (status && typeof status === 'object' && 'message' in status && typeof status.message === 'string') {
      return status.message;
    }
  } catch {
    // not JSON: a proxy's error page, say
  }
  return undefined;
}

/** An Error that names the API server's own reason instead of the client's raw dump. */
export function describeApiError(action: string, err: unknown): Error {
  const code = httpStatusOf(err);
  if (code === undefined) return new Error(`${action}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  return new Error(`${action}: HTTP ${code}${withColon(statusMessageOf(err))}`, { cause: err });
}

function withColon(text: string | undefined): string {
  return text ? `: ${text}` : '';
}
