import { z } from 'zod';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../../shared/events/types.ts';
import { MAX_URL_LENGTH } from '../../../shared/webhooks/url-policy.ts';
import { listOf, timestamp } from '../common-schemas.ts';
import { EventObject } from '../events/schema.ts';

const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => !v.includes('\u0000') && v.isWellFormed(), { error: 'must not contain NUL bytes or unpaired surrogates' });

export const CreateWebhookBody = z.strictObject({
  url: text(MAX_URL_LENGTH).min(1).meta({
    description:
      'Where events are POSTed: https (http only for localhost and 127.0.0.1 when the operator sets PADDOCK_WEBHOOK_ALLOW_LOCAL, for development). ' +
      'A delivery never connects to a loopback, private, link-local or metadata address, checked on the address it connects to.',
  }),
  events: z
    .array(z.enum([...SUBSCRIBABLE_EVENT_TYPES, '*']))
    .min(1)
    .max(SUBSCRIBABLE_EVENT_TYPES.length + 1)
    .optional()
    .meta({ description: 'Event types to send; every type ("*") when omitted' }),
  description: text(500).optional(),
});

export const WebhookParams = z.strictObject({ webhookId: z.string().max(100) });

export const DeliveriesQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(50) });

const webhookFields = {
  id: z.string().meta({ description: 'wh_…' }),
  url: z.string(),
  events: z.array(z.string()).meta({ description: '["*"]: every type' }),
  description: z.string().nullable(),
  createdAt: timestamp,
  disabledAt: timestamp.nullable().meta({ description: 'Set when it failed for the whole retry window; a test event it answers re-enables it' }),
  disabledReason: z.string().nullable(),
};

export const WebhookObject = z.object(webhookFields);
export const CreatedWebhook = z.object({
  ...webhookFields,
  secret: z.string().meta({ description: 'whsec_…: the Standard Webhooks signing secret, shown this once' }),
});
export const RotatedSecret = z.object({
  id: z.string(),
  secret: z.string().meta({ description: 'The new whsec_… secret, shown this once' }),
  previousSecretExpiresAt: timestamp.meta({ description: 'Until then deliveries are signed with both secrets (two v1 signatures)' }),
});
export const WebhookList = listOf(WebhookObject);

export const DeliveryAttempt = z.object({
  eventId: z.string(),
  eventType: z.string(),
  attempt: z.number().int(),
  statusCode: z.number().int().nullable(),
  error: z
    .string()
    .nullable()
    .meta({
      description:
        'Why the attempt failed, in Paddock\'s words (never the receiver\'s beyond its status); null for a 2xx. A host that resolves to an address ' +
        'webhooks may not reach, or to none, reads "<host> does not resolve to an address webhooks may be sent to: not connected to", never naming the address',
    }),
  durationMs: z.number().int(),
  createdAt: timestamp,
  nextRetryAt: timestamp.nullable(),
});
export const DeliveryList = listOf(DeliveryAttempt);

export const TestEventAccepted = EventObject;
