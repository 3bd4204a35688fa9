import type { Next } from 'koa';
import { ApiError } from '../../shared/errors.ts';
import type { AppContext } from '../context.ts';

/**
 * Reads and parses a JSON body with a hard size limit. Written here rather than taken from a
 * body-parser package so that every failure maps to our own codes (413, 415, invalid_json).
 */
export function jsonBody(limitBytes: number) {
  return async function readJsonBody(ctx: AppContext, next: Next): Promise<void> {
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limitBytes) throw tooLarge(limitBytes);
    const raw = await readLimited(ctx, limitBytes);
    if (raw.length === 0) {
      ctx.state.rawBody = undefined;
    } else {
      if (!ctx.is('application/json', 'application/*+json')) {
        throw new ApiError('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".');
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

async function readLimited(ctx: AppContext, limitBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) {
      // Stop reading, and close the connection once answered: the rest of the body is unwanted.
      ctx.set('Connection', 'close');
      throw tooLarge(limitBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function tooLarge(limitBytes: number): ApiError {
  return new ApiError('payload_too_large', `The request body is larger than ${limitBytes} bytes.`, {
    extra: { limitBytes },
  });
}
