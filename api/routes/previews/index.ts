import type { AppContext, AppDeps } from '../../context.ts';
import { presentPreview } from '../../presenters/preview.ts';
import { listOwnPreviews, openOwnPreview, revokeOwnPreview, type PreviewDeps } from '../../../shared/previews/previews.ts';
import { accountIdOf, route } from '../route.ts';
import { SandboxParams } from '../sandboxes/schema.ts';
import { CreatePreviewBody, CreatedPreview, PreviewList, PreviewParams } from './schema.ts';

const COMMON = { tag: 'previews', auth: 'apiKey' } as const;

/** The port the API was reached on: `*.localhost` previews are served there. */
const apiPortOf = (ctx: AppContext) => /:([0-9]{1,5})$/.exec(ctx.host)?.[1];

const previewDeps = (ctx: AppContext, deps: AppDeps): PreviewDeps => ({ em: ctx.state.em, pg: deps.pg, announcer: deps.events });

export const createPreviewRoute = route(
  {
    ...COMMON,
    method: 'post',
    path: '/v1/sandboxes/:id/previews',
    operationId: 'createPreview',
    summary: "Make a port of the sandbox reachable at a URL of its own, with a token for it (a port already previewed keeps its preview and gets a new token)",
    scope: 'previews:write',
    bucket: 'sandbox_ops',
    params: SandboxParams,
    body: CreatePreviewBody,
    responses: { 201: { description: 'The preview and a new token', schema: CreatedPreview } },
    errors: ['sandbox_not_found', 'sandbox_not_running', 'preview_limit_reached'],
  },
  async (ctx, { params, body }, deps) => {
    const opened = await openOwnPreview(previewDeps(ctx, deps), deps.config, accountIdOf(ctx), params.id, body, apiPortOf(ctx));
    ctx.status = 201;
    ctx.body = {
      ...presentPreview(opened.preview, deps.config.PADDOCK_PREVIEW_DOMAIN, apiPortOf(ctx)),
      token: opened.token,
      signedUrl: opened.signedUrl,
      expiresAt: opened.tokenExpiresAt.toISOString(),
    };
  },
);

export const listPreviewsRoute = route(
  {
    ...COMMON,
    method: 'get',
    path: '/v1/sandboxes/:id/previews',
    operationId: 'listPreviews',
    summary: "The sandbox's previewed ports (never a token)",
    scope: 'sandboxes:read',
    params: SandboxParams,
    responses: { 200: { description: 'By port', schema: PreviewList } },
    errors: ['sandbox_not_found'],
  },
  async (ctx, { params }, deps) => {
    const rows = await listOwnPreviews(deps.pg, accountIdOf(ctx), params.id);
    ctx.body = { data: rows.map((row) => presentPreview(row, deps.config.PADDOCK_PREVIEW_DOMAIN, apiPortOf(ctx))) };
  },
);

export const deletePreviewRoute = route(
  {
    ...COMMON,
    method: 'delete',
    path: '/v1/sandboxes/:id/previews/:port',
    operationId: 'deletePreview',
    summary: "Remove the port's preview: every token of it stops at once, and connections open through it are closed",
    scope: 'previews:write',
    bucket: 'sandbox_ops',
    params: PreviewParams,
    responses: { 204: { description: 'Removed' } },
    errors: ['sandbox_not_found', 'preview_not_found'],
  },
  async (ctx, { params }, deps) => {
    await revokeOwnPreview(previewDeps(ctx, deps), accountIdOf(ctx), params.id, params.port);
    ctx.status = 204;
  },
);

export const previewRoutes = [createPreviewRoute, listPreviewsRoute, deletePreviewRoute];
