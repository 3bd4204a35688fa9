import type { Command } from 'commander';
import { deliveryTable, webhookTable } from '../output/events.ts';
import { printResult, say } from '../output/print.ts';
import { fieldFlags } from '../output/fields.ts';
import { apiClient } from '../services/client.ts';
import { jsonOption, positiveInt } from './options.ts';

type Json = { json?: boolean };

const collect = (value: string, previous: string[] = []) => [...previous, ...value.split(',').map((v) => v.trim()).filter(Boolean)];

export function webhooksCommand(program: Command): void {
  const webhooks = program.command('webhooks').description('webhook endpoints: events POSTed to your URL, signed per Standard Webhooks');

  fieldFlags(
    jsonOption(
      webhooks
        .command('add')
        .description('add an endpoint; prints its signing secret, shown this once')
        .argument('<url>', 'https:// URL events are sent to')
        .option('-e, --event <type>', 'an event type to send (repeatable or comma-separated; default: all)', collect)
        .option('-d, --description <text>', 'a note for yourself'),
    ),
    { 'body.url': '<url>', 'body.events': '--event', 'body.description': '--description' },
  ).action(async (url: string, opts: Json & { event?: string[]; description?: string }) => {
    const w = await apiClient().createWebhook({ url, events: opts.event, description: opts.description });
    printResult(opts, w, (x) => x.secret);
    say(`Webhook ${w.id} added for ${w.url}. Its signing secret (above) is shown only now: keep it to verify deliveries.`);
  });

  jsonOption(webhooks.command('ls').description("list the account's endpoints")).action(async (opts: Json) => {
    const list = await apiClient().listWebhooks();
    printResult(opts, list, webhookTable);
    if (!opts.json && list.length === 0) say('No webhooks.');
  });

  jsonOption(webhooks.command('rm').description('remove an endpoint').argument('<webhook_id>', 'wh_…')).action(async (id: string, opts: Json) => {
    await apiClient().deleteWebhook(id);
    printResult(opts, { id, deleted: true }, () => undefined);
    say(`Webhook ${id} removed.`);
  });

  jsonOption(webhooks.command('test').description('send a webhook.test event to an endpoint').argument('<webhook_id>', 'wh_…')).action(
    async (id: string, opts: Json) => {
      const e = await apiClient().testWebhook(id);
      printResult(opts, e, (x) => x.id);
      say(`Test event ${e.id} sent to ${id}; see \`paddock webhooks deliveries ${id}\`.`);
    },
  );

  jsonOption(
    webhooks
      .command('deliveries')
      .description("an endpoint's recent delivery attempts, newest first")
      .argument('<webhook_id>', 'wh_…')
      .option('-n, --limit <n>', 'at most this many (default 50)', positiveInt),
  ).action(async (id: string, opts: Json & { limit?: number }) => {
    const list = await apiClient().listDeliveries(id, { limit: opts.limit });
    printResult(opts, list, deliveryTable);
    if (!opts.json && list.length === 0) say('No delivery attempts yet.');
  });
}
