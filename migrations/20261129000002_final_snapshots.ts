import { Migration } from '@mikro-orm/migrations';

export class FinalSnapshots extends Migration {
  override up(): void {
    // snapshotOnDestroy (shared/snapshots/snapshots.ts, keepFinal): the workspace is copied before
    // the sandbox is destroyed, and the destroyed row names the copy. Named, not referenced: the
    // snapshot may be deleted, or outlive the row's purge.
    this.addSql('alter table sandboxes add column snapshot_on_destroy boolean not null default false');
    this.addSql('alter table sandboxes add column final_snapshot_id text');
  }

  override down(): void {
    this.addSql('alter table sandboxes drop column final_snapshot_id');
    this.addSql('alter table sandboxes drop column snapshot_on_destroy');
  }
}
