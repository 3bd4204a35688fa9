import { Migration } from '@mikro-orm/migrations';

export class AccountsAndKeys extends Migration {
  override up(): void {
    this.addSql(`
      create table accounts (
        id text primary key,
        email text not null,
        password_hash text not null,
        created_at timestamptz not null default now(),
        concurrent_sandboxes_limit integer check (concurrent_sandboxes_limit >= 0),
        monthly_sandbox_hours_limit double precision check (monthly_sandbox_hours_limit >= 0)
      )`);
    this.addSql(`create unique index accounts_email_key on accounts (email)`);
    this.addSql(`
      create table api_keys (
        id text primary key,
        account_id text not null references accounts (id) on delete cascade,
        name text not null,
        key_hash text not null,
        start text not null,
        created_at timestamptz not null default now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      )`);
    this.addSql(`create unique index api_keys_key_hash_key on api_keys (key_hash)`);
    this.addSql(`create index api_keys_account_id_idx on api_keys (account_id, created_at)`);
  }

  override down(): void {
    this.addSql('drop table api_keys');
    this.addSql('drop table accounts');
  }
}
