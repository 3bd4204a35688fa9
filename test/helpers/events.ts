import assert from 'node:assert/strict';
import type { Pool } from 'pg';

/** A query on Paddock's database (`$1` placeholders), answering its rows. */
export type Sql = (query: string, params?: unknown[]) => Promise<unknown[]>;
export const sqlOf = (pool: Pool): Sql => async (query, params) => (await pool.query(query, params)).rows;

// "Events match transitions exactly": from the database alone, for the given sandboxes (or all of
// an account's), each has exactly the events its final row says it went through, once each, in
// the order of the state machine.

interface Row {
  id: string;
  state: string;
  status: string;
  ready_at: Date | null;
  destroy_reason: string | null;
  expiry_warned_at: Date | null;
  expires_at: Date;
}

const ORDER = ['sandbox.created', 'sandbox.running', 'sandbox.expiring', 'sandbox.failed', 'sandbox.destroyed'];

export async function assertEventsMatchTransitions(
  db: Pool | Sql,
  where: { accountId?: string; accountIds?: string[]; sandboxIds?: string[]; /** Rows a test inserted as they are: no create, no start. */ inserted?: string[] },
): Promise<number> {
  const sql = typeof db === 'function' ? db : sqlOf(db);
  const columns = 'id, state, status, ready_at, destroy_reason, expiry_warned_at, expires_at';
  const rows = (
    where.sandboxIds
      ? await sql(`select ${columns} from sandboxes where id = any($1)`, [where.sandboxIds])
      : await sql(`select ${columns} from sandboxes where account_id = any($1)`, [where.accountIds ?? [where.accountId]])
  ) as Row[];
  assert.ok(rows.length > 0, 'no sandboxes to check');
  for (const s of rows) {
    // The sandbox's own transitions: its previews' events (preview.*) are beside them.
    const all = (await sql("select type, data from events where sandbox_id = $1 and type like 'sandbox.%' order by seq", [s.id])) as {
      type: string;
      data: { sandbox: { status: string; destroyReason: string | null; expiresAt: string } };
    }[];
    // A sandbox whose end moved (its own timeout) is warned once per end: those of ends it no
    // longer has stand apart, each for another end; the row's own end is warned of as for any.
    const end = new Date(s.expires_at).toISOString();
    const earlierEnds = all.filter((e) => e.type === 'sandbox.expiring' && e.data.sandbox.expiresAt !== end).map((e) => e.data.sandbox.expiresAt);
    assert.equal(new Set(earlierEnds).size, earlierEnds.length, `${s.id}: warned twice of one end`);
    const events = all.filter((e) => e.type !== 'sandbox.expiring' || e.data.sandbox.expiresAt === end);
    const inserted = where.inserted?.includes(s.id) ?? false;
    const expected = inserted ? [] : ['sandbox.created'];
    if (s.ready_at && !inserted) expected.push('sandbox.running');
    if (s.expiry_warned_at) expected.push('sandbox.expiring');
    if (s.status === 'failed') expected.push('sandbox.failed');
    if (s.state === 'destroyed') expected.push('sandbox.destroyed');
    const types = events.map((e) => e.type);
    // expiring may come before running (a cap shorter than the warning), never elsewhere.
    const sorted = [...types].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
    const canon = (t: string[]) => t.filter((x) => x !== 'sandbox.expiring');
    assert.deepEqual(canon(types), canon(sorted), `${s.id}: events out of order: ${types.join(', ')}`);
    assert.deepEqual([...types].sort(), [...expected].sort(), `${s.id} (${s.state}/${s.status}): events ${types.join(', ')}`);
    const destroyed = events.find((e) => e.type === 'sandbox.destroyed');
    if (destroyed) assert.equal(destroyed.data.sandbox.destroyReason, s.destroy_reason, `${s.id}: destroyReason`);
  }
  return rows.length;
}
