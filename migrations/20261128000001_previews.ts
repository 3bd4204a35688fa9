import { Migration } from '@mikro-orm/migrations';

export class Previews extends Migration {
  override up(): void {
    // A preview: one port of one sandbox made reachable (shared/previews/). Its tokens are kept
    // as SHA-256 digests only; removing the preview removes them, so a revoked port's tokens stop
    // at once, and a preview made again for the port never honours the old ones.
    this.addSql(`
      create table previews (
        id text primary key,
        sandbox_id text not null references sandboxes (id) on delete cascade,
        account_id text not null references accounts (id) on delete cascade,
        port integer not null check (port between 1 and 65535),
        public boolean not null default false,
        expires_at timestamptz not null,
        created_at timestamptz not null default now(),
        unique (sandbox_id, port)
      )`);
    this.addSql(`
      create table preview_tokens (
        digest bytea primary key,
        preview_id text not null references previews (id) on delete cascade,
        expires_at timestamptz not null
      )`);
    this.addSql('create index preview_tokens_preview on preview_tokens (preview_id)');
  }

  override down(): void {
    this.addSql('drop table preview_tokens');
    this.addSql('drop table previews');
  }
}
