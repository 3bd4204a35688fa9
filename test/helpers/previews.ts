import assert from 'node:assert/strict';
import { call } from './http.ts';
import { newAccount, type TestAccount } from './accounts.ts';
import { createSandbox } from './sandboxes.ts';
import { eventually } from './eventually.ts';

// A program served from a sandbox and previewed (docs/api.md, "Preview URLs"), for the suites
// that reach it through the API's port with the preview's Host, as a browser on *.localhost does.

export interface PreviewSession {
  account: TestAccount;
  id: string;
}

export interface OpenedPreview {
  port: number;
  url: string;
  token: string;
  signedUrl: string;
  public: boolean;
}

/** A sandbox of a new account (or `account`'s) holding `files` in its workspace. */
export async function previewSession(apiUrl: string, files: Record<string, string>, account?: TestAccount): Promise<PreviewSession> {
  const a = account ?? (await newAccount(apiUrl, 'previews'));
  const s = await createSandbox(apiUrl, a.key);
  assert.equal(s.status, 201, JSON.stringify(s.body));
  for (const [path, content] of Object.entries(files)) {
    const put = await call(apiUrl, 'PUT', `/v1/sandboxes/${s.body.id}/files?path=${encodeURIComponent(path)}`, { token: a.key, body: { content } });
    assert.equal(put.status, 201, JSON.stringify(put.body));
  }
  return { account: a, id: s.body.id };
}

/** Runs `command` in the background and waits until 127.0.0.1:`port` answers `probePath` inside the sandbox. */
export async function servePreviewProgram(apiUrl: string, s: PreviewSession, command: string[], port: number, probePath = '/'): Promise<void> {
  const started = await call(apiUrl, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: s.account.key, body: { command, background: true } });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  await eventually(`the program on port ${port}`, 20_000, async () => {
    const res = await call(apiUrl, 'POST', `/v1/sandboxes/${s.id}/exec`, {
      token: s.account.key,
      body: { command: ['python3', '-c', `import urllib.request; urllib.request.urlopen('http://127.0.0.1:${port}${probePath}', timeout=2)`] },
    });
    return res.body.exitCode === 0 ? true : undefined;
  });
}

export async function openPreview(apiUrl: string, s: PreviewSession, port: number, body: Record<string, unknown> = {}): Promise<OpenedPreview> {
  const res = await call(apiUrl, 'POST', `/v1/sandboxes/${s.id}/previews`, { token: s.account.key, body: { port, ...body } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as OpenedPreview;
}

/** The preview's host on a stack without PADDOCK_PREVIEW_DOMAIN: `<port>-<id without sbx_>.localhost:<api port>`. */
export function localPreviewHost(apiUrl: string, sandboxId: string, port: number): string {
  return `${port}-${sandboxId.slice(4)}.localhost:${new URL(apiUrl).port}`;
}
