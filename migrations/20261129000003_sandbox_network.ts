import { Migration } from '@mikro-orm/migrations';

export class SandboxNetwork extends Migration {
  override up(): void {
    // A sandbox's egress policy (shared/network/policy.ts), as its create or a PATCH set it.
    this.addSql(`alter table sandboxes add column network jsonb not null default '{"egress":"none"}'::jsonb`);
  }

  override down(): void {
    this.addSql('alter table sandboxes drop column network');
  }
}
