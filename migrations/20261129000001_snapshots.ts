import { Migration } from '@mikro-orm/migrations';

export class Snapshots extends Migration {
  override up(): void {
    // A snapshot: a copy of a sandbox's workspace kept after the sandbox is gone (shared/snapshots/).
    // Its bytes are in the snapshot store under its id; the row says whether they are whole
    // (status), how many there are and their SHA-256, checked as a sandbox is started from it.
    // The sandbox it was taken from is named, not referenced: a snapshot outlives that row's purge.
    this.addSql(`
      create table snapshots (
        id text primary key,
        account_id text not null references accounts (id) on delete cascade,
        sandbox_id text not null,
        name text,
        image text not null,
        status text not null check (status in ('pending', 'ready', 'failed')),
        failure_code text,
        size_bytes bigint not null default 0,
        files integer not null default 0,
        sha256 bytea,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null
      )`);
    this.addSql('create index snapshots_account on snapshots (account_id, created_at desc, id desc)');
    this.addSql('create index snapshots_expiry on snapshots (expires_at)');
  }

  override down(): void {
    this.addSql('drop table snapshots');
  }
}
