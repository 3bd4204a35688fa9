import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream';
import type { Pool } from 'pg';
import { ApiError, problemDocument } from '../../../shared/errors.ts';
import { isDependencyUnavailable } from '../../../shared/unavailable.ts';
import type { Logger } from '../../../shared/logger.ts';
import { PortNotListeningError, SandboxGoneError, type SandboxRuntime } from '../../../shared/runtime/types.ts';
import { LOCAL_PREVIEW_DOMAIN, NOT_A_PREVIEW, parsePreviewHost, type PreviewTarget } from '../../../shared/previews/hosts.ts';
import { SIGNED_URL_PARAMETER } from '../../../shared/previews/previews.ts';
import { previewTokenDigest } from '../../../shared/previews/tokens.ts';
import { responseOnSocket } from '../../upgrade-response.ts';
import type { ConnectionSlots } from './connection-slots.ts';
import type { BulkTransfers } from '../bulk-transfers.ts';
import { PreviewAdmission, type PreviewAdmissionDeps } from './admission.ts';
import { OpenPreviewConnections } from './open-connections.ts';
import { IdleConnections } from './idle-connections.ts';
import { answerFieldsForClient, requestHead, requestHeadersForProgram, TOKEN_COOKIE, TOKEN_HEADER, tokenCookie } from './forward-headers.ts';
import { carriedReason, readProgramAnswer } from './program-answer.ts';
import { ReadBuffers } from '../../../shared/read-buffers.ts';
import type { PortReads } from '../../../shared/runtime/types.ts';

// The preview proxy (docs/api.md, "Preview URLs"): a request whose Host is a preview's goes to
// that port of that sandbox and nowhere else, never into the API's routes. Each request, and
// each WebSocket, is one connection to the program (runtime.openPort), streamed both ways with
// backpressure (pipes), and counted against the sandbox's cap over every replica.

/**
 * How much of a program's answer waits here for a slow client before its connection is paused.
 * Above the response's own high-water mark (64 KiB, one chunk of the agent's): pausing at every
 * chunk costs a stop and a start of the read per chunk, half a download's speed.
 */
const ANSWER_BUFFER_BYTES = 256 * 1024;

export interface PreviewProxyDeps {
  pg: Pool;
  runtime: Pick<SandboxRuntime, 'openPort'>;
  slots: ConnectionSlots;
  views: PreviewAdmissionDeps['views'];
  /** Each account's fair share of this process's bulk transfers: an answer is one. */
  transfers: Pick<BulkTransfers, 'open'>;
  log: Logger;
  /** PADDOCK_PREVIEW_DOMAIN: previews are served over https under it; unset, over http on *.localhost. */
  domain: string | undefined;
  /** PADDOCK_PREVIEW_IDLE_TIMEOUT_SECONDS, in ms. */
  idleMs: number;
}

interface Admitted {
  /** The request's path and query as the program gets them: less the signed URL's token. */
  path: string;
  /** A browser's signed URL: its token made a cookie, sent on to `path`. */
  cookie?: string;
  /** The token's digest (the signed URL's, the header's or the cookie's); undefined without one. */
  digest: Buffer | undefined;
}

export class PreviewProxy {
  readonly #deps: PreviewProxyDeps;
  /** The programs' answers are read into these, each used again once written to its client. */
  readonly #buffers = new ReadBuffers();
  readonly #open: OpenPreviewConnections;
  readonly #idle: IdleConnections;
  readonly #admission: PreviewAdmission;

  constructor(deps: PreviewProxyDeps) {
    this.#deps = deps;
    this.#admission = new PreviewAdmission({ pg: deps.pg, views: deps.views, slots: deps.slots });
    this.#open = new OpenPreviewConnections(deps.pg, deps.log);
    this.#idle = new IdleConnections(deps.idleMs);
  }

  /**
   * The sandbox and port the request is for, when its Host is a preview's; NOT_A_PREVIEW for
   * another host under the preview domain, answered 404 here; undefined: the API's own.
   */
  target(req: IncomingMessage): PreviewTarget | typeof NOT_A_PREVIEW | undefined {
    return parsePreviewHost(req.headers.host, this.#deps.domain ?? LOCAL_PREVIEW_DOMAIN);
  }

  /** A plain request to a preview. */
  serve(req: IncomingMessage, res: ServerResponse, target: PreviewTarget | typeof NOT_A_PREVIEW): void {
    void (async () => this.#serve(req, res, previewOrRefuse(target)))().catch((err: unknown) => this.#fail(req, res, err));
  }

  /** A WebSocket handshake to a preview; refusals are answered over HTTP before any 101. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: PreviewTarget | typeof NOT_A_PREVIEW): void {
    const res = responseOnSocket(req, socket);
    void (async () => this.#upgrade(req, socket, head, res, previewOrRefuse(target)))().catch((err: unknown) => this.#fail(req, res, err));
  }

  close(): void {
    this.#open.closeAll();
  }

  async #serve(req: IncomingMessage, res: ServerResponse, target: PreviewTarget): Promise<void> {
    const admitted = await this.#admit(req, target);
    if (admitted.cookie) return redirect(res, admitted.path, admitted.cookie);
    const buffers = this.#buffers;
    let reader: ReturnType<typeof readProgramAnswer> | undefined;
    /** What the program sent before the reader was there: copies, its memory being the next read's. */
    const early: Buffer[] = [];
    /** The buffer the connection's next read goes into: free again once the connection is closed. */
    let reading: Buffer | undefined;
    const reads: PortReads = {
      // A read's buffer the runtime kept to itself (the agent's answer) is free once the next is asked for.
      buffer: () => {
        if (reading) buffers.release(reading);
        return (reading = buffers.next());
      },
      take: (chunk) => {
        if (reading?.buffer === chunk.buffer) reading = undefined;
        try {
          if (reader) reader.take(chunk);
          else early.push(Buffer.from(chunk));
        } finally {
          buffers.release(chunk);
        }
        return true;
      },
    };
    const { upstream, release, accountId } = await this.#connect(req, target, admitted.digest, reads);
    upstream.once('close', () => {
      if (reading) buffers.release(reading);
      reading = undefined;
    });
    // The answer's bytes take their account's fair share of this process (bulk-transfers.ts).
    const transfer = this.#deps.transfers.open(accountId);
    let over = false;
    const done = () => {
      over = true;
      release();
      transfer.close();
      upstream.destroy();
    };
    // The client may have gone while the connection was being made: nothing is held for it.
    if (res.destroyed || req.socket.destroyed) return done();
    /** The program gave no answer: a refusal if the client has none yet, else the answer cut. */
    const refuse = (err: ApiError) => {
      if (over) return;
      over = true;
      if (res.headersSent) return cut(req.socket);
      this.#answer(req, res, err);
    };
    const untrack = this.#open.track(target, () => {
      res.destroy();
      done();
    });
    const unwatch = this.#idle.watch(req.socket, () => {
      refuse(new ApiError('operation_timed_out', `Nothing moved to or from the program on port ${target.port} for ${this.#deps.idleMs / 1000} s.`));
      upstream.destroy();
    });
    res.once('close', () => {
      untrack();
      unwatch();
      done();
    });
    upstream.write(requestHead(req.method ?? 'GET', admitted.path, requestHeadersForProgram(req, this.#proto(), false)));
    sendRequestBody(req, upstream);
    let corked = false;
    let waitingTurn = false;
    const uncork = () => {
      if (!corked) return;
      corked = false;
      res.uncork();
    };
    reader = readProgramAnswer(upstream, req.method ?? 'GET', {
      head: (answer) => {
        if (over) return false;
        const fields = answerFieldsForClient(answer.fields);
        if (answer.length !== undefined && answer.status !== 204) fields.push('content-length', String(answer.length));
        const invalid = writeAnswerHead(res, answer.status, answer.reason, fields);
        if (!invalid) return true;
        refuse(notValidHttp(target.port));
        this.#deps.log.debug({ err: invalid.message, sandboxId: target.sandboxId }, 'preview answer refused');
        return false;
      },
      data: (chunk) => {
        // The chunks one turn of the event loop reads go out in one write.
        if (!corked) {
          corked = true;
          res.cork();
          setImmediate(uncork);
        }
        // Its buffer serves no other read until the write is done.
        buffers.hold(chunk);
        res.write(chunk, () => buffers.release(chunk));
        const fits = res.writableLength < ANSWER_BUFFER_BYTES;
        const turn = transfer.pass(chunk.byteLength);
        if (!turn) return fits;
        waitingTurn = true;
        void turn.then(() => {
          waitingTurn = false;
          if (!res.writableNeedDrain) reader?.resume();
        });
        return false;
      },
      end: () => {
        // The answer's end goes at once: a small answer waits for no turn.
        uncork();
        res.end();
        done();
      },
      fail: (why) => {
        refuse(why === 'invalid' ? notValidHttp(target.port) : closedEarly(target.port));
        this.#deps.log.debug({ why, sandboxId: target.sandboxId }, 'preview answer not whole');
      },
    }, { fed: true });
    for (const chunk of early.splice(0)) reader.take(chunk);
    res.on('drain', () => waitingTurn || reader?.resume());
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, res: ServerResponse, target: PreviewTarget): Promise<void> {
    const admitted = await this.#admit(req, target);
    if (admitted.cookie) return redirect(res, admitted.path, admitted.cookie);
    const { upstream, release } = await this.#connect(req, target, admitted.digest);
    let answered = false;
    const done = () => {
      answered = true;
      release();
      upstream.destroy();
      socket.destroy();
    };
    if (socket.destroyed) return done();
    const refuse = (err: ApiError) => {
      if (answered) return;
      answered = true;
      upstream.destroy();
      if (res.headersSent) return cut(socket as Socket);
      this.#answer(req, res, err);
    };
    const untrack = this.#open.track(target, done);
    const unwatch = this.#idle.watch(socket as Socket, () => refuse(new ApiError('operation_timed_out', `Nothing moved to or from the program on port ${target.port} for ${this.#deps.idleMs / 1000} s.`)));
    socket.once('close', () => {
      untrack();
      unwatch();
      done();
    });
    const out = request({ createConnection: () => upstream as Socket, method: 'GET', path: admitted.path, headers: requestHeadersForProgram(req, this.#proto(), true), setHost: false });
    out.on('upgrade', (answer: IncomingMessage, programSocket: Duplex, programHead: Buffer) => {
      if (answered) return void programSocket.destroy();
      answered = true;
      // The 101 with the program's headers (Sec-WebSocket-Accept and protocol included), then bytes both ways.
      const lines = ['HTTP/1.1 101 Switching Protocols'];
      for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) lines.push(`${answer.rawHeaders[i]}: ${answer.rawHeaders[i + 1]}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
      if (programHead.length) socket.write(programHead);
      if (head.length) programSocket.write(head);
      pipeline(programSocket, socket, done);
      pipeline(socket, programSocket, done);
    });
    out.on('response', (answer) => {
      if (answered) return void answer.destroy();
      // The program refused the upgrade: its answer, as for any request.
      // Read by node:http here (the answer to a handshake): its fields as they came, names lowercased.
      const fields = answerFieldsForClient(answer.rawHeaders.map((v, i) => (i % 2 === 0 ? v.toLowerCase() : v)));
      const length = answer.headers['content-length'];
      if (length !== undefined) fields.push('content-length', length);
      if (writeAnswerHead(res, answer.statusCode ?? 502, carriedReason(answer.statusMessage), fields)) {
        answer.destroy();
        return refuse(notValidHttp(target.port));
      }
      answered = true;
      pipeline(answer, res, done);
    });
    out.on('error', () => refuse(closedEarly(target.port)));
    out.end();
  }

  /**
   * The request's path for the program, and its token's digest; a browser's signed URL is checked
   * here and becomes a cookie. Whether the request may pass is decided as its slot is taken (#connect).
   */
  async #admit(req: IncomingMessage, target: PreviewTarget): Promise<Admitted> {
    if (!req.url?.startsWith('/')) throw new ApiError('invalid_request', 'A request through a preview names a path, not a whole URL.');
    // Node keeps the first of several Host headers; a proxy in front may route by another.
    if (req.rawHeaders.filter((name, i) => i % 2 === 0 && name.toLowerCase() === 'host').length > 1) throw new ApiError('invalid_request', 'A request names one host.');
    const url = new URL(req.url, 'http://preview.invalid');
    const signed = url.searchParams.get(SIGNED_URL_PARAMETER) ?? undefined;
    const header = req.headers[TOKEN_HEADER];
    const token = signed ?? (typeof header === 'string' ? header : undefined) ?? tokenCookie(req.headers.cookie);
    const digest = previewTokenDigest(token);
    url.searchParams.delete(SIGNED_URL_PARAMETER);
    const path = `${url.pathname}${url.search}`;
    if (signed === undefined) return { path, digest };
    await this.#admission.check(target, digest);
    const secure = this.#proto() === 'https';
    // Host-only (no Domain), so it reaches this preview's host alone; an embedding page needs SameSite=None, which needs Secure.
    return { path, digest, cookie: `${TOKEN_COOKIE}=${signed}; Path=/; HttpOnly; ${secure ? 'Secure; SameSite=None' : 'SameSite=Lax'}` };
  }

  /** The request let through and a slot of the sandbox's cap taken, then a connection to the program. */
  async #connect(req: IncomingMessage, target: PreviewTarget, digest: Buffer | undefined, reads?: PortReads): Promise<{ upstream: Duplex; release: () => void; accountId: string }> {
    const { release, accountId } = await this.#admission.enter(target, digest);
    const abort = new AbortController();
    const gone = () => abort.abort();
    req.socket.once('close', gone);
    try {
      const upstream = await this.#deps.runtime.openPort(target.sandboxId, target.port, { signal: abort.signal, ...(reads ? { reads } : {}) });
      upstream.on('error', () => undefined);
      return { upstream, release, accountId };
    } catch (err) {
      release();
      if (err instanceof PortNotListeningError) throw new ApiError('port_not_listening', `Nothing listens on port ${target.port} in sandbox ${target.sandboxId}.`);
      if (err instanceof SandboxGoneError) throw new ApiError('sandbox_not_found', `No running sandbox ${target.sandboxId}.`);
      throw err;
    } finally {
      req.socket.off('close', gone);
    }
  }

  #proto(): 'http' | 'https' {
    return this.#deps.domain ? 'https' : 'http';
  }

  #fail(req: IncomingMessage, res: ServerResponse, err: unknown): void {
    const refusal = err instanceof ApiError ? err : isDependencyUnavailable(err) ? unavailable() : undefined;
    if (!refusal) this.#deps.log.error({ err }, 'preview request failed');
    else if (!(err instanceof ApiError)) this.#deps.log.warn({ err: (err as Error).message }, 'preview request: a backing service is unreachable');
    if (res.headersSent || res.destroyed) return void res.destroy();
    this.#answer(req, res, refusal ?? new ApiError('internal_error'));
  }

  /** A refusal: a problem document, or a page for a browser. */
  #answer(req: IncomingMessage, res: ServerResponse, err: ApiError): void {
    const requestId = randomUUID();
    const headers: Record<string, string> = { ...err.headers, 'x-request-id': requestId, 'cache-control': 'no-store' };
    if (/\btext\/html\b/.test(req.headers.accept ?? '')) {
      const page = `<!doctype html><meta charset="utf-8"><title>${err.status}</title><h1>${escapeHtml(problemDocument(err, requestId).title)}</h1><p>${escapeHtml(err.message)}</p>`;
      res.writeHead(err.status, { ...headers, 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(page), 'content-security-policy': "default-src 'none'" });
      res.end(page);
      return;
    }
    const body = JSON.stringify(problemDocument(err, requestId));
    res.writeHead(err.status, { ...headers, 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }
}

/**
 * Ends a client's connection mid-answer with a reset: closed gracefully, what its send buffer
 * still held (megabytes, for a client that stopped reading) would wait there for that client.
 */
function cut(socket: Socket): void {
  if (typeof socket.resetAndDestroy === 'function' && !socket.destroyed) socket.resetAndDestroy();
  else socket.destroy();
}

/**
 * The request's body to the program, framed as it came (Node's server has read it de-framed):
 * with its length raw, chunked in chunks again, none when it had neither. The connection is not
 * half-closed after it: many programs take that for the client gone.
 */
function sendRequestBody(req: IncomingMessage, upstream: Duplex): void {
  const chunked = req.headers['transfer-encoding'] !== undefined;
  req.on('data', (chunk: Buffer) => {
    if (chunk.byteLength === 0) return;
    let fits: boolean;
    if (chunked) {
      upstream.write(`${chunk.byteLength.toString(16)}\r\n`, 'latin1');
      upstream.write(chunk);
      fits = upstream.write('\r\n', 'latin1');
    } else {
      fits = upstream.write(chunk);
    }
    if (!fits) {
      req.pause();
      upstream.once('drain', () => req.resume());
    }
  });
  req.on('end', () => {
    if (chunked && !upstream.destroyed) upstream.write('0\r\n\r\n', 'latin1');
  });
}

/** A browser's signed URL: its token as a cookie, and the same URL without it. */
function redirect(res: ServerResponse, path: string, cookie: string): void {
  res.writeHead(303, { location: path, 'set-cookie': cookie, 'cache-control': 'no-store', 'content-length': '0' });
  res.end();
}

/**
 * The program's status and fields, written to the client; the error when they are not valid HTTP
 * to send on (a field the program forged): never the API's failure.
 */
function writeAnswerHead(res: ServerResponse, status: number, reason: string | undefined, fields: string[]): Error | undefined {
  try {
    res.writeHead(status, reason, fields);
    return undefined;
  } catch (err) {
    return err as Error;
  }
}

const notValidHttp = (port: number) => new ApiError('port_not_listening', `The program on port ${port} answered with a response that is not valid HTTP.`);
const closedEarly = (port: number) => new ApiError('port_not_listening', `The program on port ${port} closed the connection without a valid answer.`);

/** PostgreSQL or Redis is unreachable: whether a request may pass cannot be told, so none does, for now. */
const unavailable = () => new ApiError('service_unavailable', 'A backing service is unreachable; try again shortly.', { headers: { 'Retry-After': '1' } });

function previewOrRefuse(target: PreviewTarget | typeof NOT_A_PREVIEW): PreviewTarget {
  if (target === NOT_A_PREVIEW) throw new ApiError('not_found', 'This host is under the preview domain but names no preview (<port>-<sandbox id without sbx_>).');
  return target;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
