import { Migration } from '@mikro-orm/migrations';

export class ApiKeyScopes extends Migration {
  override up(): void {
    // null: every scope, as every key made before scopes existed has.
    this.addSql('alter table api_keys add column scopes jsonb');
  }

  override down(): void {
    this.addSql('alter table api_keys drop column scopes');
  }
}
