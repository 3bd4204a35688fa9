import type { Command } from 'commander';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { fieldFlags } from '../output/fields.ts';
import { printResult, say } from '../output/print.ts';
import { apiClient } from '../services/client.ts';
import { describeNetwork } from '../api/index.ts';
import { policyFromFlags, setSessionNetwork } from '../services/network.ts';
import { pickSession } from '../services/sessions.ts';
import { jsonOption, repeated, sameOrOne, sessionOption } from './options.ts';

type Json = { json?: boolean };

/** `network set`: where a running session's programs may connect. */
export function networkCommands(program: Command): void {
  const network = program.command('network').description("a session's egress: where its programs may connect (none, all, or a list of addresses)");

  const set = jsonOption(
    sessionOption(
      network
        .command('set')
        .description("change a running session's egress policy; prints it")
        .argument('[session_id]', 'the session (or --session; default: the one active session)')
        .option('--egress <none|all>', 'nowhere, or anywhere outside the addresses no sandbox reaches (needs a key with network:write, but for the default)')
        .option('--allow <rule>', 'a domain, address or CIDR it may reach, with an optional :port (pypi.org:443, *.githubusercontent.com, 203.0.113.0/24, [2001:db8::1]:443); repeatable, and nothing else is reached', repeated),
    ),
  );
  fieldFlags(set, { body: '--egress or --allow', 'body.egress': '--egress or --allow', 'body.egress.allow': '--allow' }).action(
    async (id: string | undefined, opts: Json & { session?: string; egress?: string; allow?: string[] }) => {
      const policy = policyFromFlags(opts);
      if (!policy) throw new CliError('Say where it may connect: --egress none, --egress all, or --allow <rule> (repeatable).', { exitCode: EXIT_USAGE });
      const client = apiClient();
      const s = await setSessionNetwork(client, await pickSession(client, sameOrOne(id, opts.session)), policy);
      printResult(opts, s, (x) => describeNetwork(x.network));
      say(`${s.id} egress: ${describeNetwork(s.network)}.`);
    },
  );
}
