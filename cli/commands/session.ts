import type { Command } from 'commander';
import { fieldFlags } from '../output/fields.ts';
import type { SandboxListState } from '../api/types.ts';
import { CliError, EXIT_ERROR, EXIT_USAGE } from '../errors.ts';
import { printResult, say } from '../output/print.ts';
import { sessionDetail, sessionTable } from '../output/sessions.ts';
import { apiClient } from '../services/client.ts';
import { confirmImpliedDestroy, createSession, listSessions, pickSession } from '../services/sessions.ts';
import { policyFromFlags } from '../services/network.ts';
import { startSpinner } from '../ui/spinner.ts';
import { durationSeconds, jsonOption, keyValue, repeated, sameOrOne, sessionOption } from './options.ts';

type Json = { json?: boolean };

export function sessionCommand(program: Command): void {
  const session = program.command('session').description('create, inspect, list and destroy sessions (sandboxes)');

  const create = jsonOption(
    session
      .command('create')
      .description('create a session and wait until it runs; prints its id')
      .option('--image <image>', "the container image (default: the operator's)")
      .option('--metadata <key=value>', 'a metadata entry (repeatable)', keyValue)
      .option('--env <NAME=value>', 'an environment variable for every exec (repeatable)', keyValue)
      .option('--timeout <duration>', 'end the session this long after its create: seconds, or 90s, 5m, 1h (default and most: the session cap)', durationSeconds)
      .option('--from-snapshot <snapshot_id>', "start with that snapshot's /workspace (and its image, unless --image names one)")
      .option('--snapshot-on-destroy', "snapshot its /workspace when it ends (destroyed, or at its cap); `session get` names the snapshot then")
      .option('--egress <none|all>', "where its programs may connect: nowhere, or anywhere outside the addresses no sandbox reaches (default: the operator's)")
      .option('--allow <rule>', 'a domain, address or CIDR it may reach, with an optional :port (pypi.org:443, *.githubusercontent.com, 203.0.113.0/24); repeatable, and nothing else is reached', repeated)
      .option('--no-wait', 'answer at once, while the session is still pending'),
  );
  type CreateOpts = Json & {
    image?: string;
    metadata?: Record<string, string>;
    env?: Record<string, string>;
    timeout?: number;
    fromSnapshot?: string;
    snapshotOnDestroy?: boolean;
    egress?: string;
    allow?: string[];
    wait: boolean;
  };
  const createFields = {
    'body.image': '--image',
    'body.metadata': '--metadata',
    'body.env': '--env',
    'body.timeoutSeconds': '--timeout',
    'body.snapshot': '--from-snapshot',
    'body.snapshotOnDestroy': '--snapshot-on-destroy',
    'body.network': '--egress or --allow',
    'body.network.egress': '--egress or --allow',
    'body.network.egress.allow': '--allow',
  };
  fieldFlags(create, createFields).action(async (opts: CreateOpts) => {
    const network = policyFromFlags(opts);
    const spinner = startSpinner('Creating a session…');
    try {
      const s = await createSession(apiClient(), {
        ...opts,
        network,
        timeoutSeconds: opts.timeout,
        snapshot: opts.fromSnapshot,
        onStatus: (sb) => spinner.text(`Session ${sb.id} is ${sb.status}…`),
      });
      spinner.stop();
      printResult(opts, s, (x) => x.id);
    } finally {
      spinner.stop();
    }
  });

  jsonOption(
    sessionOption(session.command('get').description('show one session').argument('[session_id]', 'the session (or --session; default: the one active session)')),
  ).action(async (id: string | undefined, opts: Json & { session?: string }) => {
    const client = apiClient();
    printResult(opts, await client.getSandbox(await pickSession(client, sameOrOne(id, opts.session))), (s) => sessionDetail(s));
  });

  jsonOption(
    session
      .command('timeout')
      .description('end a session this long from now, earlier or later than before (never past its session cap); prints its new end')
      .argument('<session_id>', 'the session')
      .argument('<duration>', 'seconds, or a duration such as 90s, 5m, 1h', durationSeconds),
  ).action(async (id: string, seconds: number, opts: Json) => {
    const s = await apiClient().setSandboxTimeout(id, seconds);
    printResult(opts, s, (x) => x.expiresAt);
    say(`${s.id} ends at ${s.expiresAt}.`);
  });

  jsonOption(
    session
      .command('ls')
      .description('list sessions: id, status, age, time left')
      .option('--all', 'include destroyed sessions')
      .option('--state <state>', 'active (default), destroyed or all'),
  ).action(async (opts: Json & { all?: boolean; state?: string }) => {
    const state = (opts.all ? 'all' : (opts.state ?? 'active')) as SandboxListState;
    if (!['active', 'destroyed', 'all'].includes(state)) throw new CliError('--state must be active, destroyed or all.', { exitCode: EXIT_USAGE });
    const sessions = await listSessions(apiClient(), state);
    printResult(opts, sessions, (list) => (list.length ? sessionTable(list) : undefined));
    if (!opts.json && sessions.length === 0) say(state === 'active' ? 'No active sessions. Create one with `paddock session create`.' : 'No sessions.');
  });

  jsonOption(
    sessionOption(
      session
        .command('rm')
        .alias('destroy')
        .description('destroy a session and its files (waits until it is destroyed)')
        .argument('[session_id]', 'the session (or --session; default: the one active session, after asking at a terminal)')
        .option('--no-wait', 'answer at once, while it is terminating')
        .option('-y, --yes', 'do not ask, even at a terminal, when the session is not named'),
    ),
  ).action(async (id: string | undefined, opts: Json & { session?: string; wait: boolean; yes?: boolean }) => {
    const client = apiClient();
    const named = sameOrOne(id, opts.session);
    const target = await pickSession(client, named);
    if (!named && !(await confirmImpliedDestroy(target, opts.yes === true))) {
      say('Not destroyed.');
      process.exitCode = EXIT_ERROR;
      return;
    }
    const spinner = startSpinner(`Destroying ${target}…`);
    try {
      const s = await client.destroySandbox(target, { wait: opts.wait });
      spinner.stop();
      printResult(opts, s, (x) => x.id);
      say(s.state === 'destroyed' ? `Destroyed ${s.id}.` : `${s.id} is ${s.status}.`);
    } finally {
      spinner.stop();
    }
  });
}

