import { Migration } from '@mikro-orm/migrations';

export class AllowlistsAndSecrets extends Migration {
  override up(): void {
    this.addSql(`
      create table allowlists (
        account_id text primary key references accounts (id) on delete cascade,
        commands jsonb not null default '[]',
        updated_at timestamptz not null default now()
      )`);
    // sandbox_id null: an account-wide secret. The value is AES-256-GCM ciphertext whose
    // additional data binds it to (account, sandbox, name), so rows cannot be swapped.
    this.addSql(`
      create table secrets (
        id bigserial primary key,
        account_id text not null references accounts (id) on delete cascade,
        sandbox_id text references sandboxes (id) on delete cascade,
        name text not null,
        ciphertext bytea not null,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`);
    this.addSql(`create unique index secrets_account_name on secrets (account_id, name) where sandbox_id is null`);
    this.addSql(`create unique index secrets_sandbox_name on secrets (account_id, sandbox_id, name) where sandbox_id is not null`);
    this.addSql(`create index secrets_sandbox on secrets (sandbox_id) where sandbox_id is not null`);
  }

  override down(): void {
    this.addSql('drop table secrets');
    this.addSql('drop table allowlists');
  }
}
