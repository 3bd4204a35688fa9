import { Migration } from '@mikro-orm/migrations';

export class WebhookRefusalsUnnamed extends Migration {
  override up(): void {
    // Attempts logged before a refused name's message stopped saying what the name resolved to
    // (shared/webhooks/transport.ts): reworded as they are logged now, so that no kept attempt
    // still tells its account an internal name's address.
    this.addSql(`
      update webhook_attempts
         set error = regexp_replace(error, '^(\\S+) resolves to .*$', '\\1 does not resolve to an address webhooks may be sent to: not connected to')
       where error ~ '^\\S+ resolves to '`);
  }

  override down(): void {
    // The addresses are gone for good; nothing to restore.
  }
}
