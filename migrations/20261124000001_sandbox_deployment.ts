import { Migration } from '@mikro-orm/migrations';

export class SandboxDeployment extends Migration {
  override up(): void {
    // The deployment whose runtime holds the sandbox (shared/deployment.ts): its sweeps only.
    // Rows from before it have none, and any deployment's sweeps take them, as before.
    this.addSql('alter table sandboxes add column deployment text');
  }

  override down(): void {
    this.addSql('alter table sandboxes drop column deployment');
  }
}
