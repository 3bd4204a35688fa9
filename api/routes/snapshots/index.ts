import { presentSnapshot } from '../../presenters/snapshot.ts';
import { accountIdOf, route } from '../route.ts';
import { SandboxParams } from '../sandboxes/schema.ts';
import { CreateSnapshotBody, CreateSnapshotQuery, ListSnapshotsQuery, SnapshotList, SnapshotObject, SnapshotParams } from './schema.ts';

const COMMON = { tag: 'snapshots', auth: 'apiKey' } as const;

export const createSnapshotRoute = route(
  {
    ...COMMON,
    method: 'post',
    path: '/v1/sandboxes/:id/snapshots',
    operationId: 'createSnapshot',
    summary: "Copy the running sandbox's /workspace into a snapshot that outlives it; answers once the copy is whole",
    scope: 'snapshots:write',
    bucket: 'sandbox_ops',
    inFlight: 'archives',
    params: SandboxParams,
    query: CreateSnapshotQuery,
    body: CreateSnapshotBody,
    responses: { 201: { description: 'The snapshot: ready, or pending with ?wait=false', schema: SnapshotObject, headers: { Location: 'The snapshot: /v1/snapshots/{id}' } } },
    errors: ['sandbox_not_found', 'sandbox_not_running', 'snapshot_storage_limit_reached', 'operation_timed_out', 'file_not_found'],
  },
  async (ctx, { params, query, body }, deps) => {
    const snapshot = await deps.snapshots.take(accountIdOf(ctx), params.id, body, { wait: query.wait });
    ctx.status = 201;
    ctx.set('Location', `/v1/snapshots/${snapshot.id}`);
    ctx.body = presentSnapshot(snapshot);
  },
);

export const listSnapshotsRoute = route(
  {
    ...COMMON,
    method: 'get',
    path: '/v1/snapshots',
    operationId: 'listSnapshots',
    summary: "The account's snapshots, newest first, a page at a time (pass a page's next as ?after= for the following one)",
    scope: 'sandboxes:read',
    query: ListSnapshotsQuery,
    responses: { 200: { description: 'Newest first', schema: SnapshotList } },
    errors: [],
  },
  async (ctx, { query }, deps) => {
    const page = await deps.snapshots.list(accountIdOf(ctx), query);
    ctx.body = { data: page.snapshots.map(presentSnapshot), next: page.next ?? null };
  },
);

export const getSnapshotRoute = route(
  {
    ...COMMON,
    method: 'get',
    path: '/v1/snapshots/:snapshotId',
    operationId: 'getSnapshot',
    summary: 'One snapshot',
    scope: 'sandboxes:read',
    params: SnapshotParams,
    responses: { 200: { description: 'The snapshot', schema: SnapshotObject } },
    errors: ['snapshot_not_found'],
  },
  async (ctx, { params }, deps) => {
    ctx.body = presentSnapshot(await deps.snapshots.get(accountIdOf(ctx), params.snapshotId));
  },
);

export const deleteSnapshotRoute = route(
  {
    ...COMMON,
    method: 'delete',
    path: '/v1/snapshots/:snapshotId',
    operationId: 'deleteSnapshot',
    summary: 'Delete a snapshot and its stored copy; sandboxes started from it keep their workspaces',
    scope: 'snapshots:write',
    bucket: 'sandbox_ops',
    params: SnapshotParams,
    responses: { 204: { description: 'Deleted' } },
    errors: ['snapshot_not_found'],
  },
  async (ctx, { params }, deps) => {
    await deps.snapshots.remove(accountIdOf(ctx), params.snapshotId);
    ctx.status = 204;
  },
);

export const snapshotRoutes = [createSnapshotRoute, listSnapshotsRoute, getSnapshotRoute, deleteSnapshotRoute];
