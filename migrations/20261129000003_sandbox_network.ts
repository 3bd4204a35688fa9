import { Migration } from '@mikro-orm/migrations';

export class SandboxNetwork extends Migration {
  override up(): void {
    // A sandbox's egress policy (shared/network/policy.ts), as its create or a PATCH set it.
    this.addSql(`alter table sandboxes add column network jsonb not null default '{"egress":"none"}'::jsonb`);
    // What its filter refused, as the workers' sweep last recorded it with a network.refused event
    // (at most one a minute: network_refused_at).
    this.addSql('alter table sandboxes add column network_refused integer not null default 0');
    this.addSql('alter table sandboxes add column network_refused_at timestamptz');
  }

  override down(): void {
    this.addSql('alter table sandboxes drop column network_refused_at');
    this.addSql('alter table sandboxes drop column network_refused');
    this.addSql('alter table sandboxes drop column network');
  }
}
