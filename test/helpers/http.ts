export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** A real HTTP request; the body is sent as JSON unless it is already a string. */
export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: { body?: unknown; token?: string; headers?: Record<string, string> } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  // A hung request fails the test with its own message, well before the runner's test timeout.
  const res = await fetch(new URL(path, baseUrl), { method, headers, body, signal: AbortSignal.timeout(90_000) });
  const text = await res.text();
  let parsed: unknown = text;
  if (text && /json/.test(res.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed as T };
}
