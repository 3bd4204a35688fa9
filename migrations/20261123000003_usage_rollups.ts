import { Migration } from '@mikro-orm/migrations';

export class UsageRollups extends Migration {
  override up(): void {
    // Seconds used per account and UTC month by sandboxes already destroyed (shared/usage/billing.ts).
    this.addSql(`
      create table usage_rollups (
        account_id text not null references accounts (id) on delete cascade,
        period_start timestamptz not null,
        seconds double precision not null,
        primary key (account_id, period_start)
      )`);
    // The sweep's "accounts that used sandbox time lately" reads the last hour's destroys only.
    this.addSql(`create index sandboxes_recently_destroyed on sandboxes (destroyed_at) where state = 'destroyed'`);
    // The running part of usage (count and time of the account's active sandboxes) from the index
    // alone; and statistics that know an account's rows are mostly destroyed ones, so the planner
    // does not take an account's active sandboxes for a share of all its rows.
    this.addSql(`create index sandboxes_active_usage on sandboxes (account_id, ready_at) where state = 'active'`);
    this.addSql(`create statistics sandboxes_account_state (dependencies, mcv) on account_id, state from sandboxes`);
    // The history so far, by the same rule (a released migration keeps its own copy of it).
    this.addSql(`
      insert into usage_rollups (account_id, period_start, seconds)
      select s.account_id, m.period_start,
             sum(extract(epoch from (least(s.destroyed_at, m.period_end) - greatest(s.ready_at, m.period_start))))
        from sandboxes s
        cross join lateral (
          select g at time zone 'UTC' as period_start, (g + interval '1 month') at time zone 'UTC' as period_end
            from generate_series(date_trunc('month', s.ready_at at time zone 'UTC'),
                                 date_trunc('month', s.destroyed_at at time zone 'UTC'), interval '1 month') g
        ) m
       where s.state = 'destroyed' and s.ready_at is not null and s.destroyed_at > s.ready_at
       group by s.account_id, m.period_start`);
  }

  override down(): void {
    this.addSql('drop statistics sandboxes_account_state');
    this.addSql('drop index sandboxes_active_usage');
    this.addSql('drop index sandboxes_recently_destroyed');
    this.addSql('drop table usage_rollups');
  }
}
