import { Migration } from '@mikro-orm/migrations';

export class Events extends Migration {
  override up(): void {
    // The outbox: an event is inserted by the very transaction that makes the change it reports.
    // seq orders an account's events: they are inserted under a lock of the account's row
    // (shared/repositories/events.ts), so within an account seq order is commit order and a reader that
    // has seen seq N has seen every event before it.
    this.addSql(`
      create table events (
        seq bigserial not null,
        id text primary key,
        account_id text not null references accounts (id) on delete cascade,
        sandbox_id text,
        type text not null,
        data jsonb not null,
        dedupe_key text,
        target_endpoint_id text,
        created_at timestamptz not null default now(),
        dispatched_at timestamptz
      )`);
    this.addSql(`create unique index events_seq_key on events (seq)`);
    this.addSql(`create index events_by_account on events (account_id, seq)`);
    this.addSql(`create unique index events_dedupe on events (account_id, dedupe_key) where dedupe_key is not null`);
    this.addSql(`create index events_undispatched on events (created_at) where dispatched_at is null`);
    this.addSql(`create index events_created on events (created_at)`);
    // When sandbox.expiring is due (decided at creation, as expires_at is, so every worker's sweep
    // agrees; null: no warning), and when it was recorded: once, with this column set from null.
    this.addSql(`alter table sandboxes add column expiry_warning_at timestamptz, add column expiry_warned_at timestamptz`);
    this.addSql(`
      create table webhook_endpoints (
        id text primary key,
        account_id text not null references accounts (id) on delete cascade,
        url text not null,
        description text,
        event_types jsonb,
        secret_ciphertext bytea not null,
        previous_secret_ciphertext bytea,
        previous_secret_expires_at timestamptz,
        created_at timestamptz not null default now(),
        disabled_at timestamptz,
        disabled_reason text,
        failing_since timestamptz,
        last_success_at timestamptz
      )`);
    this.addSql(`create index webhook_endpoints_by_account on webhook_endpoints (account_id, created_at)`);
    // One row per (endpoint, event): what remains to be delivered. The attempts are logged apart.
    this.addSql(`
      create table webhook_deliveries (
        endpoint_id text not null references webhook_endpoints (id) on delete cascade,
        event_id text not null references events (id) on delete cascade,
        sandbox_id text,
        event_seq bigint not null,
        state text not null default 'pending' check (state in ('pending', 'delivered', 'failed')),
        attempts integer not null default 0,
        next_attempt_at timestamptz,
        created_at timestamptz not null default now(),
        finished_at timestamptz,
        primary key (endpoint_id, event_id)
      )`);
    this.addSql(`create index webhook_deliveries_pending on webhook_deliveries (endpoint_id, sandbox_id, event_seq) where state = 'pending'`);
    this.addSql(`
      create table webhook_attempts (
        id bigserial primary key,
        endpoint_id text not null references webhook_endpoints (id) on delete cascade,
        event_id text not null,
        event_type text not null,
        attempt integer not null,
        status_code integer,
        error text,
        duration_ms integer not null,
        created_at timestamptz not null default now(),
        next_retry_at timestamptz
      )`);
    this.addSql(`create index webhook_attempts_by_endpoint on webhook_attempts (endpoint_id, id desc)`);
    this.addSql(`create index webhook_attempts_created on webhook_attempts (created_at)`);
  }

  override down(): void {
    this.addSql('drop table webhook_attempts');
    this.addSql('drop table webhook_deliveries');
    this.addSql('drop table webhook_endpoints');
    this.addSql('alter table sandboxes drop column expiry_warned_at, drop column expiry_warning_at');
    this.addSql('drop table events');
  }
}
