import { Migration } from '@mikro-orm/migrations';

export class BrokeredSecrets extends Migration {
  override up(): void {
    // A brokered secret's injection (shared/network/brokered.ts: hosts, header, format), which its
    // sandbox's egress sets as a header instead of the value reaching an environment; null for an
    // ordinary secret.
    this.addSql('alter table secrets add column inject jsonb');
  }

  override down(): void {
    this.addSql('alter table secrets drop column inject');
  }
}
