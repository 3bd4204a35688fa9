import assert from 'node:assert/strict';
import type { SandboxStack } from '../helpers/sandbox-stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

export interface FileClient {
  id: string;
  key: string;
  /** One file route: sub is '', '/ls', '/glob' or '/grep'. */
  files(method: string, sub: string, query: Record<string, string>, body?: unknown): Promise<JsonResponse>;
  view(path: string, extra?: Record<string, string>): Promise<JsonResponse>;
  put(path: string, body: unknown, extra?: Record<string, string>): Promise<JsonResponse>;
  /** Runs a shell command in the sandbox through the API's runtime (test setup and checks), within `timeoutMs` (10 s). */
  sh(script: string, timeoutMs?: number): Promise<{ exitCode: number | null; stdout: string; stderr: string }>;
}

export function fileClient(stack: SandboxStack, key: string, id: string): FileClient {
  const files = (method: string, sub: string, query: Record<string, string>, body?: unknown) =>
    call(stack.url, method, `/v1/sandboxes/${id}/files${sub}?${new URLSearchParams(query)}`, {
      token: key,
      ...(body !== undefined ? { body } : {}),
    });
  return {
    id,
    key,
    files,
    view: (path, extra = {}) => files('GET', '', { path, ...extra }),
    put: (path, body, extra = {}) => files('PUT', '', { path, ...extra }, body),
    async sh(script, timeoutMs = 10_000) {
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      const result = await stack.apis[0]!.deps.runtime.exec(id, {
        argv: ['/bin/sh', '-c', script],
        timeoutMs,
        onStdout: (c) => void out.push(Buffer.from(c)),
        onStderr: (c) => void err.push(Buffer.from(c)),
      });
      return { exitCode: result.exitCode, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
    },
  };
}

/** A running sandbox of the account's, and a client for its files. */
export async function sandboxFor(stack: SandboxStack, key: string): Promise<FileClient> {
  const res = await createSandbox(stack.url, key);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.status, 'running', JSON.stringify(res.body));
  return fileClient(stack, key, res.body.id);
}
