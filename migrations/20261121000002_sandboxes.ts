import { Migration } from '@mikro-orm/migrations';

export class Sandboxes extends Migration {
  override up(): void {
    this.addSql(`
      create table sandboxes (
        id text primary key,
        account_id text not null references accounts (id) on delete cascade,
        state text not null default 'active' check (state in ('active', 'destroyed')),
        status text not null default 'pending'
          check (status in ('pending', 'running', 'terminating', 'terminated', 'failed')),
        image text not null,
        metadata jsonb not null default '{}',
        env jsonb not null default '{}',
        created_at timestamptz not null default now(),
        ready_at timestamptz,
        expires_at timestamptz not null,
        destroyed_at timestamptz,
        destroy_reason text,
        failure_message text,
        check ((state = 'destroyed') = (destroyed_at is not null)),
        check ((state = 'destroyed') = (status in ('terminated', 'failed')))
      )`);
    // The quota check counts an account's active sandboxes, and the reaper scans active ones by
    // expiry: both stay fast however many destroyed rows accumulate.
    this.addSql(`create index sandboxes_active_by_account on sandboxes (account_id) where state = 'active'`);
    this.addSql(`create index sandboxes_active_by_expiry on sandboxes (expires_at) where state = 'active'`);
    this.addSql(`create index sandboxes_by_account_created on sandboxes (account_id, created_at desc)`);
    this.addSql(`
      create table idempotency_keys (
        account_id text not null references accounts (id) on delete cascade,
        key text not null,
        request_hash text not null,
        sandbox_id text not null references sandboxes (id) on delete cascade,
        created_at timestamptz not null default now(),
        completed_at timestamptz,
        primary key (account_id, key)
      )`);
    this.addSql(`create index idempotency_keys_created on idempotency_keys (created_at)`);
  }

  override down(): void {
    this.addSql('drop table idempotency_keys');
    this.addSql('drop table sandboxes');
  }
}
