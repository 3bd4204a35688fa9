import { Migration } from '@mikro-orm/migrations';

export class SecretVersions extends Migration {
  override up(): void {
    // A token per account that changes with every write to its secrets (account-wide or any
    // sandbox's), in the same transaction: an API replica that opened an account's secrets at one
    // token sends it with the exec's read, and the ciphertexts come back only when it changed
    // (shared/repositories/sandboxes.ts). Random rather than a counter: a token names one state of
    // the secrets for good, also after a database is restored to an earlier one.
    this.addSql(`
      create table secret_versions (
        account_id text primary key references accounts (id) on delete cascade,
        version uuid not null
      )`);
    // Triggers, so that no writer can forget: the API's writes, the re-encryption script, a
    // cascade. An account being deleted gets no new row (its secrets go by
    // cascade after it, and its versions with it).
    this.addSql(`
      create function secret_versions_bump() returns trigger language plpgsql as $$
      begin
        insert into secret_versions (account_id, version)
        select c.account_id, gen_random_uuid()
          from (select distinct account_id from changed) c
         where exists (select 1 from accounts a where a.id = c.account_id)
        on conflict (account_id) do update set version = excluded.version;
        return null;
      end $$`);
    this.addSql(`create trigger secrets_inserted after insert on secrets referencing new table as changed for each statement execute function secret_versions_bump()`);
    this.addSql(`create trigger secrets_updated after update on secrets referencing new table as changed for each statement execute function secret_versions_bump()`);
    this.addSql(`create trigger secrets_deleted after delete on secrets referencing old table as changed for each statement execute function secret_versions_bump()`);
    this.addSql(`insert into secret_versions (account_id, version) select account_id, gen_random_uuid() from (select distinct account_id from secrets) s`);
  }

  override down(): void {
    this.addSql('drop trigger secrets_deleted on secrets');
    this.addSql('drop trigger secrets_updated on secrets');
    this.addSql('drop trigger secrets_inserted on secrets');
    this.addSql('drop function secret_versions_bump()');
    this.addSql('drop table secret_versions');
  }
}
