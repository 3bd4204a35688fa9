import { presentEvent } from '../../../shared/events/types.ts';
import { presentAttempt, presentWebhook } from '../../presenters/webhook.ts';
import { webhookStore } from '../../../shared/repositories/webhooks.ts';
import { createWebhook, deleteWebhook, findOwnWebhook, recordTestEvent, rotateSecret } from '../../services/webhooks.ts';
import { accountIdOf, route } from '../route.ts';
import {
  CreateWebhookBody,
  CreatedWebhook,
  DeliveriesQuery,
  DeliveryList,
  RotatedSecret,
  TestEventAccepted,
  WebhookList,
  WebhookParams,
} from './schema.ts';

const COMMON = { tag: 'webhooks', auth: 'apiKey', scope: 'webhooks:write', bucket: 'account' } as const;

export const createWebhookRoute = route(
  {
    ...COMMON,
    method: 'post',
    path: '/v1/webhooks',
    operationId: 'createWebhook',
    summary: 'Add a webhook endpoint; its signing secret (Standard Webhooks, whsec_…) is in this answer only',
    body: CreateWebhookBody,
    responses: { 201: { description: 'The endpoint, with its secret', schema: CreatedWebhook, headers: { Location: 'The endpoint: /v1/webhooks/{webhookId}' } } },
    errors: ['webhook_url_not_allowed', 'webhook_limit_reached'],
  },
  async (ctx, { body }, deps) => {
    const { row, secret } = await createWebhook({ config: deps.config, cipher: deps.webhookCipher }, webhookStore(ctx.state.em, deps.pg), accountIdOf(ctx), body);
    ctx.status = 201;
    ctx.set('Location', `/v1/webhooks/${row.id}`);
    ctx.body = { ...presentWebhook(row), secret };
  },
);

export const listWebhooksRoute = route(
  {
    ...COMMON,
    method: 'get',
    path: '/v1/webhooks',
    operationId: 'listWebhooks',
    summary: "The account's webhook endpoints (never their secrets)",
    responses: { 200: { description: 'Endpoints', schema: WebhookList } },
    errors: [],
  },
  async (ctx, _input, deps) => {
    ctx.body = { data: (await webhookStore(ctx.state.em, deps.pg).list(accountIdOf(ctx))).map(presentWebhook) };
  },
);

export const deleteWebhookRoute = route(
  {
    ...COMMON,
    method: 'delete',
    path: '/v1/webhooks/:webhookId',
    operationId: 'deleteWebhook',
    summary: 'Remove a webhook endpoint; deliveries still pending to it are dropped',
    params: WebhookParams,
    responses: { 204: { description: 'Removed' } },
    errors: ['webhook_not_found'],
  },
  async (ctx, { params }, deps) => {
    await deleteWebhook(webhookStore(ctx.state.em, deps.pg), accountIdOf(ctx), params.webhookId);
    ctx.status = 204;
  },
);

export const listDeliveriesRoute = route(
  {
    ...COMMON,
    method: 'get',
    path: '/v1/webhooks/:webhookId/deliveries',
    operationId: 'listWebhookDeliveries',
    summary: "The endpoint's recent delivery attempts, newest first: event, status code, error, duration, next retry",
    params: WebhookParams,
    query: DeliveriesQuery,
    responses: { 200: { description: 'Attempts', schema: DeliveryList } },
    errors: ['webhook_not_found'],
  },
  async (ctx, { params, query }, deps) => {
    const store = webhookStore(ctx.state.em, deps.pg);
    const endpoint = await findOwnWebhook(store, accountIdOf(ctx), params.webhookId);
    ctx.body = { data: (await store.attempts(endpoint.id, query.limit)).map(presentAttempt) };
  },
);

export const testWebhookRoute = route(
  {
    ...COMMON,
    method: 'post',
    path: '/v1/webhooks/:webhookId/test',
    operationId: 'testWebhook',
    summary: 'Send a webhook.test event to this endpoint (also while it is disabled: a 2xx to it re-enables the endpoint)',
    params: WebhookParams,
    responses: { 202: { description: 'The test event, on its way', schema: TestEventAccepted } },
    errors: ['webhook_not_found'],
  },
  async (ctx, { params }, deps) => {
    const accountId = accountIdOf(ctx);
    const store = webhookStore(ctx.state.em, deps.pg);
    const endpoint = await findOwnWebhook(store, accountId, params.webhookId);
    const event = await recordTestEvent(store, accountId, endpoint.id);
    await deps.events.announce([event]);
    ctx.status = 202;
    ctx.body = presentEvent(event);
  },
);

export const rotateSecretRoute = route(
  {
    ...COMMON,
    method: 'post',
    path: '/v1/webhooks/:webhookId/secret',
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate the signing secret: the new one is in this answer only; the former one also signs for PADDOCK_WEBHOOK_SECRET_ROTATION_HOURS',
    params: WebhookParams,
    responses: { 200: { description: 'The new secret', schema: RotatedSecret } },
    errors: ['webhook_not_found'],
  },
  async (ctx, { params }, deps) => {
    ctx.body = await rotateSecret({ config: deps.config, cipher: deps.webhookCipher }, webhookStore(ctx.state.em, deps.pg), accountIdOf(ctx), params.webhookId);
  },
);

export const webhookRoutes = [createWebhookRoute, listWebhooksRoute, deleteWebhookRoute, listDeliveriesRoute, testWebhookRoute, rotateSecretRoute];
