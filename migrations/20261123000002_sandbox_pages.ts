import { Migration } from '@mikro-orm/migrations';

export class SandboxPages extends Migration {
  override up(): void {
    // The list's keyset, (created_at, id) newest first, with and without its state filter: a page
    // reads its own rows, however many sandboxes the account has had.
    this.addSql(`create index sandboxes_page_by_account on sandboxes (account_id, created_at desc, id desc)`);
    this.addSql(`create index sandboxes_page_by_account_state on sandboxes (account_id, state, created_at desc, id desc)`);
    this.addSql(`drop index sandboxes_by_account_created`);
  }

  override down(): void {
    this.addSql(`create index sandboxes_by_account_created on sandboxes (account_id, created_at desc)`);
    this.addSql(`drop index sandboxes_page_by_account_state`);
    this.addSql(`drop index sandboxes_page_by_account`);
  }
}
