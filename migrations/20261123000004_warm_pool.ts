import { Migration } from '@mikro-orm/migrations';

export class WarmPool extends Migration {
  override up(): void {
    // Pre-started sandboxes of no account: not in `sandboxes` (so neither billed nor counted) until
    // a create claims one and its row is made, with its cap starting then.
    this.addSql(`
      create table warm_sandboxes (
        id text primary key,
        deployment text not null,
        image text not null,
        status text not null check (status in ('starting', 'ready')),
        created_at timestamptz not null default now(),
        ready_at timestamptz
      )`);
    // A pool belongs to the deployment (PADDOCK_REDIS_PREFIX) whose runtime holds its sandboxes:
    // deployments that share a database never claim, count or tend each other's.
    this.addSql(`create index warm_sandboxes_ready on warm_sandboxes (deployment, image, ready_at) where status = 'ready'`);
  }

  override down(): void {
    this.addSql('drop table warm_sandboxes');
  }
}
