import type { KnownErrorCode, ProblemDocument } from './types.ts';

/** Every error the client throws is one of these, so callers can catch the family at once. */
export class PaddockError extends Error {
  override name = 'PaddockError';
}

/** The API answered with an error (an RFC 9457 problem document, or something unexpected). */
export class PaddockApiError extends PaddockError {
  override name = 'PaddockApiError';
  readonly status: number;
  /** The stable machine-readable code: branch on this, never on `detail`. */
  readonly code: KnownErrorCode | (string & {});
  readonly detail: string;
  readonly title: string;
  readonly requestId: string | undefined;
  /** Seconds to wait before retrying, from the Retry-After header of a 429. */
  readonly retryAfter: number | undefined;
  /** The whole problem document, with any extra members. */
  readonly problem: ProblemDocument | undefined;

  constructor(init: {
    status: number;
    code: string;
    detail: string;
    title?: string;
    requestId?: string;
    retryAfter?: number;
    problem?: ProblemDocument;
  }) {
    super(`${init.detail} (${init.code})`);
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail;
    this.title = init.title ?? init.detail;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.problem = init.problem;
  }
}

/** A base address the client refuses to send a credential to (the https rule). */
export class InsecureBaseUrlError extends PaddockError {
  override name = 'InsecureBaseUrlError';
  readonly baseUrl: string;
  constructor(baseUrl: string, message: string) {
    super(message);
    this.baseUrl = baseUrl;
  }
}

/** The API could not be reached at all (DNS, refused connection, TLS, a dropped stream). */
export class PaddockConnectionError extends PaddockError {
  override name = 'PaddockConnectionError';
  readonly baseUrl: string;
  constructor(baseUrl: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.baseUrl = baseUrl;
  }
}

/**
 * A credential the client will not send: it holds a character no key or token has (a space, a
 * line break, a control character), which a header cannot carry. The message never repeats it.
 */
export class MalformedCredentialError extends PaddockError {
  override name = 'MalformedCredentialError';
  readonly credential: 'apiKey' | 'token';
  constructor(credential: 'apiKey' | 'token') {
    super(`The ${credential === 'apiKey' ? 'API key' : 'session token'} holds a character no credential has (a space, a line break or a control character).`);
    this.credential = credential;
  }
}

/**
 * A directory transfer refused on this side, before or without the API: `not_a_directory` (what
 * uploadDir was given is no directory), `unsafe_member` (a downloaded archive names a path that
 * would land outside the target directory), `malformed_archive` (a downloaded archive is not tar,
 * or ends before its end).
 */
export class LocalArchiveError extends PaddockError {
  override name = 'LocalArchiveError';
  readonly code: 'not_a_directory' | 'unsafe_member' | 'malformed_archive';
  /** Never answered by the API: always undefined. */
  readonly status: undefined = undefined;
  /** The archive member refused, as the archive names it. */
  readonly member: string | undefined;
  constructor(code: 'not_a_directory' | 'unsafe_member' | 'malformed_archive', message: string, member?: string) {
    super(message);
    this.code = code;
    this.member = member;
  }
}
