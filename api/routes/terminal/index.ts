import { ApiError } from '../../../shared/errors.ts';
import { findOwnSandboxWithPolicy } from '../../services/sandboxes.ts';
import { prepareTerminal } from '../../services/terminal/prepare.ts';
import { openTerminal } from '../../services/terminal/open.ts';
import { acceptUpgrade, checkUpgrade, TERMINAL_SUBPROTOCOL } from '../../services/terminal/upgrade.ts';
import { accountIdOf, route } from '../route.ts';
import { REVOKED_DETAIL } from '../../auth/key-sessions.ts';
import { Ticket, TicketParams, TerminalParams, TerminalQuery } from './schema.ts';
import { inSandboxError } from '../../../shared/sandboxes/running.ts';


export const terminalRoute = route(
  {
    method: 'get',
    path: '/v1/sandboxes/:id/terminal',
    operationId: 'openTerminal',
    summary:
      'A WebSocket (subprotocol paddock.terminal.v1) to a command on a pseudo-terminal in the sandbox. Binary frames, first byte the channel: 0 stdin (client to server), 1 output (server to client, secrets masked), 3 control JSON: the client sends {"type":"resize","cols":C,"rows":R}, the server {"type":"exit","exitCode":N,"signal":null} before it closes. Keystrokes and resizes are applied in the order they are sent, those sent before the command has started (a resize as the socket opens) once it has. Close codes: 1000 after the exit, 1008 a frame that breaks the protocol, 1009 a frame over 64 KiB, 1011 a failure, 4001 the sandbox is gone (the reason says why), 4002 idle past PADDOCK_TERMINAL_IDLE_SECONDS, 4003 the API key (or the ticket’s) was revoked: its command is killed, and nothing more is sent or taken. A refused upgrade is answered with a problem document',
    tag: 'exec',
    auth: 'apiKey',
    scope: 'exec',
    bucket: 'sandbox_ops',
    inFlight: 'terminal',
    websocket: { subprotocol: TERMINAL_SUBPROTOCOL },
    params: TerminalParams,
    query: TerminalQuery,
    requestHeaders: [
      { name: 'Upgrade', description: 'websocket' },
      { name: 'Sec-WebSocket-Protocol', description: TERMINAL_SUBPROTOCOL },
    ],
    responses: { 101: { description: 'Switching protocols: the terminal is open' } },
    errors: ['upgrade_required', 'sandbox_not_found', 'sandbox_not_running', 'command_not_allowed'],
  },
  async (ctx, { params, query }, deps) => {
    checkUpgrade(ctx, TERMINAL_SUBPROTOCOL);
    const context = await findOwnSandboxWithPolicy(deps, accountIdOf(ctx), params.id);
    const { sandbox } = context;
    const prepared = prepareTerminal(context, query.command);
    const session = ctx.state.session;
    let opened;
    try {
      opened = await openTerminal(deps, sandbox.id, prepared, { cols: query.cols ?? 80, rows: query.rows ?? 24 }, ctx.req.socket, session);
    } catch (err) {
      if (session?.revoked) throw new ApiError('invalid_credential', REVOKED_DETAIL);
      throw inSandboxError(err, sandbox.id, 'terminal');
    }
    // No 101 for a key revoked while the terminal opened, nor for one not confirmed lately.
    if (session && !(await session.ready())) {
      opened.bridge.end();
      throw new ApiError('invalid_credential', REVOKED_DETAIL);
    }
    acceptUpgrade(ctx, TERMINAL_SUBPROTOCOL, (ws) => opened.bridge.attach(ws, opened.session));
  },
);

export const ticketRoute = route(
  {
    method: 'post',
    path: '/v1/sandboxes/:id/terminal/tickets',
    operationId: 'createTerminalTicket',
    summary: 'A single-use ticket, valid 60 s, that opens this sandbox’s terminal for clients that cannot set headers on a WebSocket (browsers)',
    tag: 'exec',
    auth: 'apiKey',
    scope: 'exec',
    bucket: 'account',
    params: TicketParams,
    responses: { 201: { description: 'The ticket', schema: Ticket } },
    errors: ['sandbox_not_found'],
  },
  async (ctx, { params }, deps) => {
    const auth = ctx.state.auth;
    const sandbox = await deps.sandboxes.findOwn(accountIdOf(ctx), params.id);
    if (auth?.kind !== 'apiKey' || !auth.keyHash) throw new ApiError('invalid_credential');
    const ticket = await deps.terminalTickets.issue({ accountId: auth.accountId, keyId: auth.keyId, keyHash: auth.keyHash, sandboxId: sandbox.id });
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = ticket;
  },
);

export const terminalRoutes = [terminalRoute, ticketRoute];
