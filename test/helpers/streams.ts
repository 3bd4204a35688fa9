import assert from 'node:assert/strict';

/** A streamed answer (NDJSON, Server-Sent Events) read as it comes: its text so far, and how it ended. A GET, or a POST of `body` as JSON. */
export async function openStream(url: string, path: string, key: string, accept: string, body?: unknown) {
  const headers = { authorization: `Bearer ${key}`, accept, ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
  const res = await fetch(`${url}${path}`, body === undefined ? { headers } : { method: 'POST', headers, body: JSON.stringify(body) });
  assert.equal(res.status, 200);
  let text = '';
  const ended = (async (): Promise<'ended' | 'broken'> => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body!) text += decoder.decode(chunk, { stream: true });
      return 'ended';
    } catch {
      return 'broken';
    }
  })();
  return { text: () => text, ended };
}

/** What `promise` gives, or a failure after `ms`: for what would otherwise hang the test. */
export async function within<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new assert.AssertionError({ message: `${what} did not happen within ${ms} ms` })), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
