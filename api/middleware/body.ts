import type { Next } from 'koa';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import type { AppContext } from '../context.ts';
import { JsonShapeGuard, type ShapeOptions } from './json-shape.ts';
import { bytesMoved } from '../../shared/reclaim.ts';

// A body cut short by its client answers invalid_request (api/middleware/errors.ts), as does a
// JSON body of a shape refused before it is parsed (json-shape.ts).
export const JSON_BODY_ERRORS: readonly ErrorCode[] = ['invalid_json', 'unsupported_media_type', 'payload_too_large', 'invalid_request'];
// A streamed body is data, never JSON.
export const STREAMED_BODY_ERRORS: readonly ErrorCode[] = ['unsupported_media_type', 'payload_too_large', 'invalid_request'];

/**
 * Reads and parses a JSON body with a hard size limit. Written here rather than taken from a
 * body-parser package so that every failure maps to our own codes (413, 415, invalid_json).
 */
export function jsonBody(limitBytes: number, shapeOptions: ShapeOptions = {}) {
  return async function readJsonBody(ctx: AppContext, next: Next): Promise<void> {
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limitBytes) throw tooLarge(limitBytes);
    refuseEncoded(ctx);
    const raw = await readLimited(ctx, limitBytes, shapeOptions);
    if (raw.length === 0) {
      ctx.state.rawBody = undefined;
    } else {
      if (!ctx.is('application/json', 'application/*+json')) {
        throw new ApiError('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".');
      }
      const charset = ctx.request.charset.toLowerCase();
      if (charset && charset !== 'utf-8' && charset !== 'utf8') {
        throw new ApiError('unsupported_media_type', `The body is read as UTF-8, the only charset JSON has; send it so (not ${charset}).`);
      }
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
      } catch {
        throw new ApiError('invalid_json', 'The request body is not valid UTF-8.');
      }
      try {
        ctx.state.rawBody = JSON.parse(text);
      } catch (err) {
        throw new ApiError('invalid_json', `The request body is not valid JSON: ${(err as Error).message}`);
      }
    }
    await next();
  };
}

/**
 * A body in a content or transfer coding this server does not undo (gzip, br…) is refused, not
 * read as if it were plain: its bytes would be parsed as JSON, or extracted as a tar, wrongly.
 * (A gzipped archive is sent as itself, Content-Type application/gzip.)
 */
function refuseEncoded(ctx: AppContext): void {
  const content = ctx.get('content-encoding').trim().toLowerCase();
  const codings = ctx
    .get('transfer-encoding')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'chunked');
  if ((content && content !== 'identity') || codings.length > 0) {
    throw new ApiError('unsupported_media_type', `The body must not be encoded (Content-Encoding or Transfer-Encoding ${content || codings.join(', ')}); send it as it is.`);
  }
}

/** In a streamed body's media types: any body is taken, whatever it says it is (a file's bytes). */
export const ANY_MEDIA_TYPE = '*/*';

/**
 * A body that is data (an archive), handed to the handler as it comes: the media type must be one
 * of `mediaTypes` (or they hold ANY_MEDIA_TYPE), and the body is cut at `limitBytes`, by its declared length before a byte is
 * read, else by its count as it streams. Nothing is buffered here: the handler's consumer paces
 * the client (TCP's flow control does the rest).
 */
export function streamedBody(mediaTypes: string[], limitBytes: number) {
  return async function acceptStreamedBody(ctx: AppContext, next: Next): Promise<void> {
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limitBytes) throw tooLarge(limitBytes);
    refuseEncoded(ctx);
    const mediaType = ctx.request.type.toLowerCase();
    if (!mediaTypes.includes(ANY_MEDIA_TYPE) && !mediaTypes.includes(mediaType)) {
      throw new ApiError('unsupported_media_type', `Send the body with Content-Type ${mediaTypes.join(' or ')}.`, {
        extra: { accepted: mediaTypes },
      });
    }
    let received = 0;
    const req = ctx.req;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      // Not destroyed when its reader stops early (the command failed): the answer still goes out
      // on this connection, which the error handler then closes.
      const body = req.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>;
      for (;;) {
        let next: IteratorResult<Buffer>;
        try {
          next = await body.next();
        } catch {
          throw new ApiError('invalid_request', 'The request body ended before it was complete.');
        }
        if (next.done) return;
        bytesMoved(next.value.length);
        received += next.value.length;
        if (received > limitBytes) throw tooLarge(limitBytes);
        yield next.value;
      }
    }
    ctx.state.streamedBody = { mediaType, chunks: chunks(), received: () => received };
    await next();
  };
}

async function readLimited(ctx: AppContext, limitBytes: number, shapeOptions: ShapeOptions): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const shape = new JsonShapeGuard(shapeOptions);
  // Not destroyed when the loop stops early (too large, a bad shape): the rest of the body is then
  // read and dropped after the answer (api/lingering-close.ts), which a destroyed request cannot be.
  for await (const chunk of ctx.req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    bytesMoved(chunk.length);
    // Stop reading: the answer goes out, the rest of the body is dropped and the connection closed.
    if (size > limitBytes) throw tooLarge(limitBytes);
    shape.push(chunk);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function tooLarge(limitBytes: number): ApiError {
  return new ApiError('payload_too_large', `The request body is larger than ${limitBytes} bytes.`, {
    extra: { limitBytes },
  });
}
