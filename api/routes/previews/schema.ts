import { z } from 'zod';
import { listOf, timestamp } from '../common-schemas.ts';

const Port = z.number().int().min(1).max(65_535).meta({ description: 'A TCP port a program in the sandbox listens on (on loopback or on every address)' });

export const PreviewParams = z.strictObject({
  id: z.string().max(100),
  port: z.coerce.number().int().min(1).max(65_535).meta({ description: 'The previewed port' }),
});

/** A token lives an hour by default, a week at most; the preview itself stays until revoked or the sandbox ends. */
export const CreatePreviewBody = z.strictObject({
  port: Port,
  public: z.boolean().optional().meta({ description: 'Open to everyone, no token needed. A new preview is private; an existing one keeps its setting unless this is given' }),
  expiresInSeconds: z.number().int().min(60).max(7 * 24 * 3600).default(3600).meta({ description: "The new token's lifetime" }),
});

export const PreviewSummary = z.object({
  port: z.number().int(),
  url: z.string(),
  public: z.boolean(),
  expiresAt: timestamp.meta({ description: 'When the last token made for the port expires' }),
});

export const CreatedPreview = PreviewSummary.extend({
  token: z.string().meta({ description: 'Sent as X-Paddock-Preview-Token by programs; opens this port of this sandbox only' }),
  signedUrl: z.string().meta({ description: 'The URL with the token, for a browser: it is traded for a host-only HttpOnly cookie' }),
  expiresAt: timestamp.meta({ description: 'When this token expires' }),
});

export const PreviewList = listOf(PreviewSummary);
