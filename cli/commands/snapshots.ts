import type { Command } from 'commander';
import { fieldFlags } from '../output/fields.ts';
import { printResult, say } from '../output/print.ts';
import { size, snapshotTable } from '../output/snapshots.ts';
import { apiClient } from '../services/client.ts';
import { pickSession } from '../services/sessions.ts';
import { createSnapshot, deleteSnapshot, listSnapshots } from '../services/snapshots.ts';
import { startSpinner } from '../ui/spinner.ts';
import { jsonOption, sameOrOne, sessionOption } from './options.ts';

type Json = { json?: boolean };

/** `snapshot create`, `snapshot ls` and `snapshot rm <id>`: a session's workspace kept past its end. */
export function snapshotCommands(program: Command): void {
  const snapshot = program
    .command('snapshot')
    .description("keep a session's /workspace past its end: `snapshot create` copies it, `session create --from-snapshot <id>` starts a session from it");

  const create = jsonOption(
    sessionOption(
      snapshot
        .command('create')
        .description("copy a session's /workspace into a snapshot and wait until it is ready; prints its id")
        .argument('[session_id]', 'the session (or --session; default: the one active session)')
        .option('--name <name>', 'a name of your own for it')
        .option('--no-wait', 'answer at once, while the copy is still pending'),
    ),
  );
  fieldFlags(create, { 'body.name': '--name' }).action(async (id: string | undefined, opts: Json & { session?: string; name?: string; wait: boolean }) => {
    const client = apiClient();
    const sessionId = await pickSession(client, sameOrOne(id, opts.session));
    const spinner = startSpinner(`Copying the /workspace of ${sessionId}…`);
    try {
      const s = await createSnapshot(client, sessionId, { name: opts.name, wait: opts.wait });
      spinner.stop();
      printResult(opts, s, (x) => x.id);
      if (s.status === 'ready') {
        say(`Snapshot ${s.id} of ${sessionId}: ${size(s.sizeBytes)}, ${s.files} files, kept until ${s.expiresAt}.`);
        say(`Start a session from it: paddock session create --from-snapshot ${s.id}`);
      } else {
        say(`Snapshot ${s.id} of ${sessionId} is being copied: \`paddock snapshot ls\` shows it ready (or failed, and why).`);
      }
    } finally {
      spinner.stop();
    }
  });

  jsonOption(snapshot.command('ls').description("list the account's snapshots, newest first")).action(async (opts: Json) => {
    const list = await listSnapshots(apiClient());
    printResult(opts, list, (l) => (l.length ? snapshotTable(l) : undefined));
    if (!opts.json && list.length === 0) say('No snapshots.');
  });

  jsonOption(snapshot.command('rm').description('delete a snapshot (sessions started from it keep their workspaces)').argument('<snapshot_id>', 'the snapshot')).action(
    async (id: string, opts: Json) => {
      await deleteSnapshot(apiClient(), id);
      printResult(opts, { id, deleted: true }, () => undefined);
      say(`Deleted snapshot ${id}.`);
    },
  );
}
