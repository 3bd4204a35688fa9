import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { RunningApi } from '../../api/server.ts';
import type { Route } from '../../api/routes/route.ts';
import { errorCatalogue, type ErrorCode } from '../../shared/errors.ts';
import type { TestAccount } from '../helpers/accounts.ts';
import { craftJwt, unsignedJwt } from '../helpers/auth-suite.ts';
import { uniqueEmail } from '../helpers/config.ts';
import type { AccountName, BodyPlan, Plan, TcpMangle } from './plans.ts';

// Sends fuzz plans over real HTTP and judges the answers. Every answer, whatever was sent, must
// be a proper one: no 5xx, an error is a problem document of the catalogue, the security headers
// and a request id are there, a success matches the route's documented response schema, and no
// planted secret or internal detail appears anywhere in it.

export interface World {
  api: RunningApi;
  url: string;
  accounts: Record<AccountName, TestAccount>;
  /** Running sandboxes the fuzz never destroys (their owners' DELETEs are redirected to churn). */
  stable: { A1: string; A2: string; B1: string };
  /** A destroyed sandbox of A. */
  dead: string;
  /** An account-wide secret of A. */
  secretName: string;
  revokedKey: string;
  /** Sandboxes and keys created during the run, with the account that created them. */
  churn: { id: string; owner: AccountName }[];
  spareKeys: { id: string; owner: AccountName }[];
  /** Webhook endpoints the fuzz keeps (their owners' DELETEs go to a spare one instead), and spares made during the run. */
  webhooks: { A: string; B: string };
  /** Background processes of each stable sandbox, by sandbox id: one that runs (it reads stdin), one that has ended. */
  procs: Record<string, { running: string; ended: string }>;
  spareWebhooks: { id: string; owner: AccountName }[];
  /** Strings that must never appear in any answer. */
  planted: { label: string; value: string }[];
  routes: Map<string, Route>;
  /** The error codes the served OpenAPI document lists for each route ("POST /v1/sandboxes"). */
  documented: Map<string, Set<string>>;
}

/** The error codes per operation of an OpenAPI document: its problem responses list them. */
export function documentedCodes(doc: {
  paths: Record<string, Record<string, { responses: Record<string, { description: string; content?: Record<string, unknown> }> }>>;
}): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const codes = new Set<string>();
      for (const response of Object.values(op.responses)) {
        if (response.content?.['application/problem+json']) for (const code of response.description.split(', ')) codes.add(code);
      }
      out.set(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`, codes);
    }
  }
  return out;
}

const MISSING_SANDBOX = `sbx_${'0'.repeat(24)}`;
const MISSING_KEY = `key_${'0'.repeat(24)}`;
const MISSING_WEBHOOK = `wh_${'0'.repeat(24)}`;
const MISSING_PROC = `proc_${'0'.repeat(24)}`;

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export function closeClient(): void {
  agent.destroy();
}

// ---------------------------------------------------------------------------------------------
// From plan to bytes

function actorOf(plan: Plan): AccountName | undefined {
  const c = plan.credential;
  return c.kind === 'own' || c.kind === 'otherType' ? c.account : undefined;
}

let turn = 0;
function pick<T>(items: T[]): T | undefined {
  turn = (turn + 1) % 1_000_003;
  return items.length ? items[turn % items.length] : undefined;
}

/** The live value behind a reference such as "@sbx.A1"; anything else is returned as it is. */
function resolveRef(value: string, plan: Plan, world: World, resolved?: Map<string, string>): string {
  if (!value.startsWith('@')) return value;
  const actor = actorOf(plan);
  // (Any plan whose path is a sandbox's may be sent with DELETE: GET /v1/sandboxes/:id's too.)
  const path = world.routes.get(plan.route)?.spec.path;
  const destroyingSandbox = path === '/v1/sandboxes/:id' && plan.method === 'DELETE';
  const revokingKey = path === '/v1/api-keys/:keyId' && plan.method === 'DELETE';
  const deletingWebhook = path === '/v1/webhooks/:webhookId' && plan.method === 'DELETE';
  const spareWebhook = () => {
    const mine = world.spareWebhooks.filter((k) => k.owner === actor);
    return pick(mine.length ? mine : world.spareWebhooks)?.id ?? MISSING_WEBHOOK;
  };
  const churn = () => {
    const mine = world.churn.filter((c) => c.owner === actor);
    return pick(mine.length ? mine : world.churn)?.id ?? MISSING_SANDBOX;
  };
  const spare = () => {
    const mine = world.spareKeys.filter((k) => k.owner === actor);
    return pick(mine.length ? mine : world.spareKeys)?.id ?? MISSING_KEY;
  };
  switch (value) {
    case '@sbx.mine': {
      if (destroyingSandbox || actor === 'C' || actor === undefined) return churn();
      return actor === 'B' ? world.stable.B1 : (pick([world.stable.A1, world.stable.A2]) ?? world.stable.A1);
    }
    case '@sbx.A1':
    case '@sbx.A2':
    case '@sbx.B1': {
      const name = value.slice(5) as keyof World['stable'];
      // The fuzz keeps its stable sandboxes: their owner's DELETEs go to a churn sandbox instead.
      if (destroyingSandbox && actor === name[0]) return churn();
      return world.stable[name];
    }
    case '@sbx.dead':
      return world.dead;
    case '@sbx.missing':
      return MISSING_SANDBOX;
    case '@sbx.churn':
      return churn();
    case '@key.A':
    case '@key.B': {
      const owner = value.slice(5) as AccountName;
      if (revokingKey && actor === owner) return spare();
      return world.accounts[owner].keyId;
    }
    case '@key.spare':
      return spare();
    case '@key.missing':
      return MISSING_KEY;
    case '@wh.A':
    case '@wh.B': {
      const owner = value.slice(4) as 'A' | 'B';
      if (deletingWebhook && actor === owner) return spareWebhook();
      return world.webhooks[owner];
    }
    case '@wh.missing':
      return MISSING_WEBHOOK;
    case '@proc.same':
      // The process of the sandbox this request names (the path's id, resolved before it).
      // Input goes to the one that runs; everything else (output, with follow too, and stop) to the
      // one that has ended, so no request waits on a process that never ends.
      const sandboxId = resolved?.get('id') ?? '';
      if (!Object.hasOwn(world.procs, sandboxId)) return MISSING_PROC;
      return path?.endsWith('/stdin') ? world.procs[sandboxId]!.running : world.procs[sandboxId]!.ended;
    case '@proc.missing':
      return MISSING_PROC;
    case '@secret.A':
      return world.secretName;
    case '@email.fresh':
      return uniqueEmail('fuzz');
    case '@email.A':
      return world.accounts.A.email;
    case '@email.B':
      return world.accounts.B.email;
    case '@password':
      return world.accounts.A.password;
    default:
      return value;
  }
}

function resolveDeep(value: unknown, plan: Plan, world: World): unknown {
  if (typeof value === 'string') return resolveRef(value, plan, world);
  if (Array.isArray(value)) return value.map((v) => resolveDeep(v, plan, world));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // defineProperty, so that a "__proto__" key stays an own key and is sent as such.
      Object.defineProperty(out, k, { value: resolveDeep(v, plan, world), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

/** Percent-encodes every byte but the unreserved ones (lone surrogates go out as U+FFFD). */
function encode(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function buildBody(body: BodyPlan, plan: Plan, world: World): Buffer {
  switch (body.kind) {
    case 'json':
      return Buffer.from(JSON.stringify(resolveDeep(body.value, plan, world)) ?? 'null');
    case 'text':
      return Buffer.from(body.text.replace(/@(?:sbx|key|secret|email)\.\w+|@password/g, (ref) => resolveRef(ref, plan, world)));
    case 'bytes':
    case 'raw':
      return Buffer.from(body.hex, 'hex');
    case 'huge': {
      const base = resolveDeep(body.base, plan, world) as Record<string, unknown>;
      return Buffer.from(JSON.stringify({ ...base, [body.field]: 'x'.repeat(body.size) }));
    }
  }
}

function authorizationOf(plan: Plan, route: Route, world: World): string | undefined {
  const c = plan.credential;
  const kindFor = (flip: boolean) => {
    const wantsKey = route.spec.auth === 'apiKey' || (route.spec.auth === 'none' && !flip);
    return flip ? !wantsKey : wantsKey;
  };
  const now = Math.floor(Date.now() / 1000);
  const a = world.accounts.A;
  switch (c.kind) {
    case 'none':
      return undefined;
    case 'own':
    case 'otherType': {
      const account = world.accounts[c.account];
      return `Bearer ${kindFor(c.kind === 'otherType') ? account.key : account.token}`;
    }
    case 'revoked':
      return `Bearer ${world.revokedKey}`;
    case 'raw':
      return c.header;
    case 'forged': {
      const api = world.api;
      const token = {
        algNone: () => unsignedJwt(a.id),
        expired: () => craftJwt(api, a.id, { claims: { iat: now - 7200, nbf: now - 7200, exp: now - 3600 } }),
        notYet: () => craftJwt(api, a.id, { claims: { nbf: now + 3600 } }),
        wrongAudience: () => craftJwt(api, a.id, { claims: { aud: 'paddock-api' } }),
        wrongSecret: () => craftJwt(api, a.id, { secret: 'not the secret' }),
        hs512: () => craftJwt(api, a.id, { algorithm: 'HS512' }),
        noSubject: () => craftJwt(api, a.id, { claims: { sub: undefined } }),
        foreignSubject: () => craftJwt(api, a.id, { claims: { sub: `acct_${'0'.repeat(24)}` } }),
      }[c.how]();
      return `Bearer ${token}`;
    }
  }
}

export interface BuiltRequest {
  method: string;
  /** Path and query, as sent. */
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
  chunked: boolean;
  tcp?: TcpMangle;
}

export function buildRequest(plan: Plan, world: World): BuiltRequest {
  const route = world.routes.get(plan.route)!;
  const resolved = new Map<string, string>();
  let path = route.spec.path.replace(/:(\w+)/g, (_, name: string) => {
    const segment = plan.params[name]!;
    const value = resolveRef(segment.value, plan, world, resolved);
    resolved.set(name, value);
    return segment.raw ? value : encode(value);
  });
  if (Array.isArray(plan.query)) {
    if (plan.query.length) path += `?${plan.query.map(([k, v]) => `${encode(resolveRef(k, plan, world))}=${encode(resolveRef(v, plan, world))}`).join('&')}`;
  } else {
    path += `?${plan.query.raw}`;
  }
  const headers: Record<string, string> = {};
  const authorization = authorizationOf(plan, route, world);
  if (authorization !== undefined) headers.authorization = authorization;
  for (const [name, value] of Object.entries(plan.headers)) headers[name] = value;
  let body: Buffer | undefined;
  if (plan.body && plan.method !== 'HEAD') {
    body = buildBody(plan.body, plan, world);
    if (!('content-type' in headers)) headers['content-type'] = plan.body.kind === 'raw' ? plan.body.contentType : 'application/json';
  }
  if (headers['content-type'] === '') delete headers['content-type'];
  if (headers['idempotency-key'] === '') delete headers['idempotency-key'];
  return { method: plan.method, target: path, headers, body, chunked: plan.chunked === true, tcp: plan.tcp?.mangle };
}

// ---------------------------------------------------------------------------------------------
// Sending

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** Set when no answer came: the connection failed or was closed first. */
  error?: string;
}

const ANSWER_TIMEOUT_MS = 120_000;

function sendHttp(url: URL, req: BuiltRequest, retry = true): Promise<Answer> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (answer: Answer) => {
      if (!settled) {
        settled = true;
        resolve(answer);
      }
    };
    let outgoing;
    try {
      outgoing = httpRequest(
        { host: url.hostname, port: url.port, method: req.method, path: req.target, headers: req.headers, agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (err) => done({ status: res.statusCode ?? 0, headers: toHeaders(res.headers), text: '', error: err.message }));
          res.on('end', () =>
            done({ status: res.statusCode ?? 0, headers: toHeaders(res.headers), text: Buffer.concat(chunks).toString('utf8') }),
          );
        },
      );
    } catch {
      // Node refuses to send some header bytes: send those over a raw socket instead.
      void sendTcp(url, { ...req, tcp: 'utf8HeaderValue' }).then(done);
      return;
    }
    const sent = outgoing;
    sent.setTimeout(ANSWER_TIMEOUT_MS, () => {
      sent.destroy(new Error(`no answer within ${ANSWER_TIMEOUT_MS} ms`));
    });
    sent.on('error', (err: NodeJS.ErrnoException) => {
      if (settled) return;
      // A kept-alive socket the server had just closed: the usual one retry.
      if (retry && sent.reusedSocket && err.code === 'ECONNRESET') {
        void sendHttp(url, req, false).then(done);
        return;
      }
      done({ status: 0, headers: new Headers(), text: '', error: `${err.code ?? ''} ${err.message}` });
    });
    if (req.body && req.chunked) {
      const half = Math.floor(req.body.length / 2);
      sent.write(req.body.subarray(0, half));
      sent.end(req.body.subarray(half));
    } else if (req.body) {
      sent.end(req.body);
    } else {
      sent.end();
    }
  });
}

function toHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

/** The request as raw bytes, with one thing Node's client would never send. */
function rawBytes(url: URL, req: BuiltRequest): Buffer {
  const headerValue = (v: string) => Buffer.from(v, 'latin1');
  let method = req.method;
  let target = req.target;
  let version = 'HTTP/1.1';
  let eol = '\r\n';
  const lines: Buffer[] = [];
  const add = (name: string, value: Buffer | string) =>
    lines.push(Buffer.concat([Buffer.from(`${name}: `), typeof value === 'string' ? headerValue(value) : value]));
  add('Host', `${url.hostname}:${url.port}`);
  add('Connection', 'close');
  for (const [name, value] of Object.entries(req.headers)) add(name, Buffer.from(value, 'utf8'));
  let body = req.body ?? Buffer.alloc(0);
  let framing: Buffer[] = [Buffer.from(`Content-Length: ${body.length}`)];
  switch (req.tcp) {
    case 'utf8HeaderValue':
      add('X-Fuzz', Buffer.from('🦀 ключ \u202e', 'utf8'));
      break;
    case 'controlCharInHeader':
      add('X-Fuzz', Buffer.from([0x61, 0x00, 0x62, 0x7f]));
      break;
    case 'obsFold':
      add('X-Fuzz', 'a\r\n folded');
      break;
    case 'bareLf':
      eol = '\n';
      break;
    case 'duplicateContentLength':
      framing.push(Buffer.from(`Content-Length: ${body.length + 5}`));
      break;
    case 'contentLengthAndChunked':
      framing.push(Buffer.from('Transfer-Encoding: chunked'));
      break;
    case 'badMethod':
      method = 'G@T';
      break;
    case 'http10':
      version = 'HTTP/1.0';
      break;
    case 'absoluteUri':
      target = `http://evil.example${target}`;
      break;
    case 'hugeHeader':
      add('X-Fuzz', 'a'.repeat(20_000));
      break;
    case 'badChunk':
      framing = [Buffer.from('Transfer-Encoding: chunked')];
      body = Buffer.from('zz\r\nhello\r\n0\r\n\r\n');
      break;
    case 'spaceBeforeColon':
      lines.push(Buffer.from('X-Fuzz : spaced'));
      break;
    case undefined:
      break;
  }
  const head = Buffer.from(`${method} ${target} ${version}${eol}`, 'latin1');
  const all = [...lines, ...framing].map((l) => Buffer.concat([l, Buffer.from(eol)]));
  return Buffer.concat([head, ...all, Buffer.from(eol), body]);
}

/** One request down a fresh socket; the answer is read until the server closes. */
function sendTcp(url: URL, req: BuiltRequest): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    let finished = false;
    const finish = (error?: string) => {
      if (finished) return;
      finished = true;
      socket.destroy();
      resolve(parseRaw(Buffer.concat(chunks), error));
    };
    socket.setTimeout(ANSWER_TIMEOUT_MS, () => finish(`no answer within ${ANSWER_TIMEOUT_MS} ms`));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    socket.on('error', (err) => finish(err.message));
    socket.write(rawBytes(url, req));
  });
}

function parseRaw(data: Buffer, error?: string): Answer {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return { status: 0, headers: new Headers(), text: '', error: error ?? `no HTTP answer (${data.length} bytes)` };
  const [statusLine, ...lines] = data.subarray(0, headEnd).toString('latin1').split('\r\n');
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0);
  let body = data.subarray(headEnd + 4);
  const length = headers.get('content-length');
  if (length !== null) body = body.subarray(0, Number(length));
  else if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) body = dechunk(body);
  return { status, headers, text: body.toString('utf8') };
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const eol = data.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (!size) break;
    out.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

export async function send(world: World, req: BuiltRequest): Promise<Answer> {
  const url = new URL(world.url);
  return req.tcp ? sendTcp(url, req) : sendHttp(url, req);
}

// ---------------------------------------------------------------------------------------------
// Judging

const INTERNALS = /\n\s+at |node_modules|\.ts:\d+|(?:^|[^a-z])(?:select|insert|update|delete) .* from |ECONNREFUSED|MikroORM|ioredis|bullmq|TypeError|ReferenceError/i;

/** What is wrong with an answer to `req` (built from `plan`); empty when nothing is. */
export function judge(plan: Plan, req: BuiltRequest, answer: Answer, world: World): string[] {
  const route = world.routes.get(plan.route)!;
  const problems: string[] = [];
  if (answer.error !== undefined || answer.status === 0) {
    // A body far over the limit may be cut off by the server's close before Node reads the 413.
    const oversized = (req.body?.length ?? 0) > 64 * 1024;
    if (!oversized) problems.push(`no answer: ${answer.error ?? 'status 0'}`);
    return problems;
  }
  if (answer.status >= 500) problems.push(`answered ${answer.status}`);
  const h = answer.headers;
  if (!h.get('x-request-id')) problems.push('no X-Request-Id');
  if (h.get('x-content-type-options') !== 'nosniff') problems.push('no X-Content-Type-Options: nosniff');
  if (h.get('cache-control') !== 'no-store') problems.push('no Cache-Control: no-store');
  if (h.get('x-powered-by') !== null) problems.push(`X-Powered-By: ${h.get('x-powered-by')}`);
  const acao = h.get('access-control-allow-origin');
  if (acao === '*' || (acao && acao === req.headers.origin)) problems.push(`Access-Control-Allow-Origin: ${acao}`);
  for (const { label, value } of world.planted) {
    if (answer.text.includes(value)) problems.push(`the answer holds ${label}`);
  }
  const sent = `${req.target} ${req.body?.toString('utf8') ?? ''}`;
  for (const word of ['passwordHash', 'password_hash', 'keyHash', 'key_hash', 'ciphertext']) {
    // (An error may name an unknown field the request itself sent.)
    if (answer.text.includes(word) && !sent.includes(word)) problems.push(`the answer mentions ${word}`);
  }
  const type = h.get('content-type') ?? '';
  const bodyless = req.method === 'HEAD' || answer.status === 204 || (answer.status === 200 && req.method === 'OPTIONS');

  if (answer.status >= 400 && !bodyless) {
    if (!/^application\/problem\+json/.test(type)) problems.push(`error with Content-Type ${type}`);
    let doc: Record<string, unknown> | undefined;
    try {
      doc = JSON.parse(answer.text) as Record<string, unknown>;
    } catch {
      problems.push(`error body is not JSON: ${answer.text.slice(0, 200)}`);
    }
    if (doc) {
      const code = doc.code as ErrorCode;
      const entry = errorCatalogue[code] as { status: number; title: string } | undefined;
      if (!entry) problems.push(`code ${String(doc.code)} is not in the catalogue`);
      else {
        if (entry.status !== answer.status) problems.push(`code ${code} answered with ${answer.status}, catalogued ${entry.status}`);
        if (doc.title !== entry.title) problems.push(`title of ${code} is not the catalogue's`);
      }
      if (doc.status !== answer.status) problems.push(`problem status ${String(doc.status)} on a ${answer.status}`);
      if (doc.type !== `urn:paddock:error:${String(doc.code)}`) problems.push(`problem type ${String(doc.type)}`);
      if (typeof doc.detail !== 'string') problems.push('problem without a detail');
      if (doc.requestId !== h.get('x-request-id')) problems.push('problem requestId differs from X-Request-Id');
      if ('stack' in doc) problems.push('problem carries a stack');
      if (INTERNALS.test(String(doc.detail))) problems.push(`problem detail shows internals: ${String(doc.detail).slice(0, 200)}`);
    }
  }

  if (answer.status >= 200 && answer.status < 300 && req.method === route.spec.method.toUpperCase() && !bodyless) {
    const declared = route.spec.responses[answer.status];
    if (!declared) problems.push(`success status ${answer.status} is not documented`);
    else if (/application\/x-ndjson/.test(type)) {
      const ndjsonFirst = declared.contentType === 'application/x-ndjson';
      const schema = ndjsonFirst ? declared.schema : declared.alternatives?.find((a) => a.contentType === 'application/x-ndjson')?.schema;
      if (!schema) problems.push('streamed an undocumented media type');
      const lines = answer.text.split('\n').filter((l) => l !== '');
      const parsed = lines.map((l) => {
        try {
          return JSON.parse(l) as { type?: string; code?: ErrorCode };
        } catch {
          problems.push(`stream line is not JSON: ${l.slice(0, 100)}`);
          return {};
        }
      });
      for (const line of parsed) {
        if (schema && !schema.safeParse(line).success) problems.push(`stream line does not match the schema: ${JSON.stringify(line).slice(0, 200)}`);
      }
      const last = parsed.at(-1);
      // A command's stream ends with how it ended; a background process's output, read while it
      // runs (without follow), ends where its kept output ends.
      const stillRunning = ndjsonFirst && !new URL(req.target, 'http://x').searchParams.has('follow');
      if (!stillRunning && (!last || (last.type !== 'exit' && last.type !== 'error'))) problems.push('the stream does not end with an exit or error line');
      if (last?.type === 'error' && (errorCatalogue[last.code!]?.status ?? 500) >= 500) problems.push(`the stream ended with error ${String(last.code)}`);
    } else if (declared.contentType && !/json/.test(declared.contentType)) {
      // Data, not JSON (an archive): its media type must be one the route documents.
      const documented = [declared.contentType, ...(declared.alternatives ?? []).map((a) => a.contentType)];
      if (!documented.some((t) => type.startsWith(t))) problems.push(`success with an undocumented media type ${type}`);
    } else if (declared.schema) {
      let value: unknown;
      try {
        value = JSON.parse(answer.text);
      } catch {
        problems.push(`success body is not JSON: ${answer.text.slice(0, 200)}`);
      }
      const result = declared.schema.safeParse(value);
      if (!result.success) problems.push(`success body does not match the documented schema: ${result.error.issues[0]?.message} at ${result.error.issues[0]?.path.join('.')}`);
    }
  }
  return problems;
}

// Codes of the HTTP layer, before any route: no operation lists them.
const HTTP_CODES = new Set<string>(['not_found', 'method_not_allowed', 'headers_too_large']);

/**
 * The error code of an answer to a request that reached its route (its method, its path), when
 * the served OpenAPI document does not list it for that operation.
 */
export function undocumentedCode(plan: Plan, req: BuiltRequest, answer: Answer, world: World): string | undefined {
  const route = world.routes.get(plan.route)!;
  if (answer.status < 400 || req.tcp || req.method !== route.spec.method.toUpperCase()) return undefined;
  let code: string;
  try {
    code = (JSON.parse(answer.text) as { code: string }).code;
  } catch {
    return undefined;
  }
  if (HTTP_CODES.has(code) || world.documented.get(plan.route)?.has(code)) return undefined;
  return code;
}

/** Records what a successful answer created, for later requests to use or destroy. */
export function harvest(plan: Plan, req: BuiltRequest, answer: Answer, world: World): void {
  const actor = actorOf(plan);
  if (!actor || plan.credential.kind !== 'own' || req.method !== plan.route.split(' ')[0]) return;
  let body: { id?: string; state?: string } | undefined;
  try {
    body = JSON.parse(answer.text) as { id?: string; state?: string };
  } catch {
    return;
  }
  if (plan.route === 'POST /v1/sandboxes' && answer.status === 201 && body.id && !world.churn.some((c) => c.id === body.id)) {
    world.churn.push({ id: body.id, owner: actor });
  } else if (plan.route === 'POST /v1/api-keys' && answer.status === 201 && body.id) {
    world.spareKeys.push({ id: body.id, owner: actor });
  } else if (plan.route === 'POST /v1/webhooks' && answer.status === 201 && body.id) {
    world.spareWebhooks.push({ id: body.id, owner: actor });
  } else if (plan.route === 'DELETE /v1/sandboxes/:id' && answer.status === 200 && body.state === 'destroyed') {
    world.churn = world.churn.filter((c) => c.id !== body.id);
  }
}
