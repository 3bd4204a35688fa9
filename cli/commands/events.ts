import type { Command } from 'commander';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PaddockClient } from '../api/index.ts';
import { PaddockApiError } from '../api/index.ts';
import type { PaddockEvent } from '../api/types.ts';
import { eventLine } from '../output/events.ts';
import { json } from '../output/format.ts';
import { say } from '../output/print.ts';
import { apiClient } from '../services/client.ts';
import { jsonOption, positiveInt } from './options.ts';

type Flags = { json?: boolean; follow?: boolean; after?: string; limit?: number };

const RECONNECT_MS = 2000;

export function eventsCommand(program: Command): void {
  jsonOption(
    program
      .command('events')
      .description("the account's events (sandbox lifecycle, usage thresholds, webhooks), oldest first")
      .option('-f, --follow', 'then keep printing new events as they happen (reconnects, resuming where it stopped)')
      .option('--after <event_id>', 'only events after this one')
      .option('-n, --limit <n>', 'at most this many past events (default 100)', positiveInt),
  ).action(async (opts: Flags) => {
    const client = apiClient();
    const print = (e: PaddockEvent) => process.stdout.write(`${opts.json ? JSON.stringify(e) : eventLine(e)}\n`);
    const past = await client.listEvents({ after: opts.after, limit: opts.limit });
    if (!opts.follow) {
      if (opts.json) process.stdout.write(`${json(past)}\n`);
      else if (past.length === 0) say('No events.');
      else for (const e of past) print(e);
      return;
    }
    for (const e of past) print(e);
    await follow(client, past.at(-1)?.id ?? opts.after, print);
  });
}

/** Streams until interrupted; a dropped stream is resumed after the last event printed. */
async function follow(client: PaddockClient, after: string | undefined, print: (e: PaddockEvent) => void): Promise<never> {
  let last = after;
  for (;;) {
    try {
      for await (const e of client.streamEvents({ after: last })) {
        print(e);
        last = e.id;
      }
    } catch (err) {
      if (err instanceof PaddockApiError && err.status < 500 && err.status !== 429) throw err;
      say(`The event stream was interrupted (${err instanceof Error ? err.message : String(err)}); reconnecting…`);
    }
    await sleep(RECONNECT_MS);
  }
}
