import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { fetchPreviewUrl } from '../helpers/preview-fetch.ts';
import { startChromium } from '../helpers/chromium.ts';

// A preview as a browser uses it (docs/api.md, "Preview URLs"): headless Chromium opens the signed
// URL of a page served from a sandbox (test/previews/program.py's `/`), follows the redirect that
// trades the token for a cookie, and runs the page's script, whose fetch of an absolute path and
// WebSocket reach the program through the same preview host with that cookie alone. Chromium maps
// *.localhost to loopback itself.

const stack = await startSandboxStack();
const browser = await startChromium();
after(() => browser.close());

/** Opens `url` in the page; the command answers once the new document is committed. */
async function open(url: string): Promise<void> {
  const { errorText } = (await browser.send('Page.navigate', { url }, true)) as { errorText?: string };
  assert.equal(errorText, undefined, `opening ${url}`);
}

/** What the page's script wrote into its `<pre id=out>`, once it has written (null: no such element). */
async function pageOutput(): Promise<string | null> {
  return eventually('the page script\'s output', 30_000, async () => {
    const out = (await browser.evaluate("document.readyState === 'complete' ? (document.getElementById('out')?.textContent ?? null) : undefined")) as string | null | undefined;
    return out === 'waiting' ? undefined : out;
  }, 200);
}

test('a page opened at its signed URL fetches an absolute path and echoes over a WebSocket; the token cookie stays HttpOnly', async () => {
  const account = await newAccount(stack.url, 'browser');
  const sandbox = await createSandbox(stack.url, account.key);
  assert.equal(sandbox.status, 201, JSON.stringify(sandbox.body));
  const id: string = sandbox.body.id;
  const put = await call(stack.url, 'PUT', `/v1/sandboxes/${id}/files?path=program.py`, { token: account.key, body: { content: readFileSync(new URL('./program.py', import.meta.url), 'utf8') } });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const started = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: account.key, body: { command: ['python3', 'program.py', '8000', '127.0.0.1'], background: true } });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const made = await call(stack.url, 'POST', `/v1/sandboxes/${id}/previews`, { token: account.key, body: { port: 8000 } });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const preview = made.body as { url: string; token: string; signedUrl: string };
  await eventually('the program behind the preview', 20_000, async () => ((await fetchPreviewUrl(`${preview.url}api/hello`, { 'x-paddock-preview-token': preview.token })).status === 200 ? true : undefined));

  // Without the token the browser gets the proxy's 401 page, not the program's.
  await open(preview.url);
  assert.equal(await pageOutput(), null);
  assert.equal(await browser.evaluate('document.title'), '401');

  await open(preview.signedUrl);
  const output = await pageOutput();
  assert.ok(output !== null && output.startsWith('{'), `the page's script failed: ${output}`);
  const seen = JSON.parse(output) as { hello: { hello: string; cookie: string | null }; echo: string; cookie: string };
  assert.deepEqual(seen, {
    // The fetch reached the program with the page's own cookie and without the token's.
    hello: { hello: 'from the sandbox', cookie: 'app=1' },
    echo: 'echo:ping',
    // The program's cookie is the script's to read; the token's is not.
    cookie: 'app=1',
  });
  assert.equal(await browser.evaluate('location.href'), preview.url, 'the address bar keeps the token');

  // The browser holds the token as a host-only HttpOnly cookie of the preview's host.
  const { cookies } = (await browser.send('Network.getCookies', { urls: [preview.url] }, true)) as { cookies: { name: string; value: string; domain: string; httpOnly: boolean }[] };
  const token = cookies.find((c) => c.name === 'paddock_preview_token');
  assert.deepEqual(token && { value: token.value, domain: token.domain, httpOnly: token.httpOnly }, { value: preview.token, domain: new URL(preview.url).hostname, httpOnly: true });
});
