import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { ADDRESS_IN_TEXT, ERASED, ERASED_ON_REQUEST, RETENTION_TABLES, type RetentionTables } from './policy.js';
import { HOLD_END, HOLD_ERASURE, NOW, setClause, stillPersonal, type TableCounts, erasureCloseAttemptsSql, erasureIntentsSql } from './sql.js';

export interface TenantErasureBatch {
  /** Stories erased in this batch (a batch shorter than the limit was the last). */
  stories: number;
  /** Where the next batch starts: the latest hold end erased here (null when nothing was). */
  cursor: Date | null;
  counts: TableCounts;
  rejectedPending: number;
  inFlight: number;
}

/**
 * Erase up to `limit` of one tenant's stories not yet erased, whatever their
 * age: the per-story erasure of the prune pass (storiesErase in queries.ts),
 * with the pending intents of those stories treated as `erase --email`
 * treats them (address-erasure.ts): rejected with reason "erased on
 * request" so nothing more is sent, an attempt still open closed as
 * abandoned. Held holds are not touched (they are live reservations).
 *
 * The batch walks support_reservations_unerased (migration 0009) from
 * `cursor`, oldest end first: an erased hold leaves that index, and the
 * cursor keeps each batch from re-reading other tenants' rows the previous
 * one already passed, so a whole run reads the index once. There is no
 * index on the tenant, on purpose (a rare request; the lane's index on
 * email_outbox.tenant covers pending intents only). Rows are waited for,
 * not skipped (the caller's lock_timeout bounds the wait): a request must
 * not report done with stories left. Run it in a transaction.
 *
 * Parameters: $1 now, $2 tenant, $3 limit, $4 cursor, $5 the address pattern.
 */
export async function tenantEraseBatch(
  db: Queryable,
  schema: string,
  tenant: string,
  options: { now: Date | null; limit: number; cursor: Date | null; tables?: RetentionTables },
): Promise<TenantErasureBatch> {
  const s = ident(schema);
  const tables = options.tables ?? RETENTION_TABLES;
  const children = tables.storyChildren.map((child, i) => {
    const t = `${s}.${ident(child.table)}`;
    const rows = `t.intent_id = ANY (ARRAY(SELECT id FROM intents))`;
    if (child.erase === 'delete') return `c${i} AS (DELETE FROM ${t} t WHERE ${rows} RETURNING 1)`;
    return `c${i} AS (UPDATE ${t} t SET ${setClause(child.erase, 't', '$5')} WHERE ${rows} AND ${stillPersonal('t', child.erase, '$5')} RETURNING 1)`;
  });
  const { rows } = await db.query<Record<string, unknown>>(
    `WITH roots AS MATERIALIZED (
       -- The predicate of support_reservations_unerased, written out so the planner walks it.
       SELECT r.id, ${HOLD_END} AS ended FROM ${s}.support_reservations r
        WHERE r.status <> 'held' AND r.customer_email IS NOT NULL
          AND ${HOLD_END} >= $4::timestamptz
          AND r.tenant = $2::text
        ORDER BY ${HOLD_END}
        LIMIT $3
          FOR UPDATE OF r
     ), intents AS MATERIALIZED (
       SELECT o.id, o.state, o.lease_token IS NOT NULL AS leased FROM ${s}.email_outbox o
        WHERE o.reservation_id = ANY (ARRAY(SELECT id FROM roots))
          FOR UPDATE OF o
     ), pending AS (
       SELECT id, leased FROM intents WHERE state = 'pending'
     ), closed AS (
       ${erasureCloseAttemptsSql(s)}
     ), ${children.map((c) => c + ',').join('\n     ')} intents_done AS (
       ${erasureIntentsSql(s, '$5')}
     ), holds_done AS (
       UPDATE ${s}.support_reservations r SET ${HOLD_ERASURE('$5')}
        WHERE r.id = ANY (ARRAY(SELECT id FROM roots))
        RETURNING 1
     )
     SELECT (SELECT count(*) FROM holds_done)::int AS holds,
            (SELECT count(*) FROM intents_done)::int AS intents,
            (SELECT count(*) FROM closed)::int AS closed,
            (SELECT count(*) FROM pending)::int AS rejected,
            (SELECT count(*) FROM pending WHERE leased)::int AS in_flight,
            ${children.map((_, i) => `(SELECT count(*) FROM c${i})::int AS c${i},`).join('\n            ')}
            (SELECT max(ended) FROM roots) AS cursor`,
    [options.now, tenant, options.limit, options.cursor ?? '-infinity', ADDRESS_IN_TEXT],
  );
  const row = rows[0]! as Record<string, number> & { cursor: Date | null };
  const counts: TableCounts = {};
  tables.storyChildren.forEach((child, i) => (counts[child.table] = (counts[child.table] ?? 0) + row[`c${i}`]!));
  // Closing an open attempt also takes the address-free reason, so it counts as a change.
  counts.email_attempts = (counts.email_attempts ?? 0) + row.closed!;
  counts.email_outbox = row.intents!;
  counts.support_reservations = row.holds!;
  return { stories: row.holds!, cursor: row.cursor, counts, rejectedPending: row.rejected!, inFlight: row.in_flight! };
}

/** The tenant's held holds: erasure leaves them (live reservations) and reports them. */
export async function tenantHeldHolds(db: Queryable, schema: string, tenant: string): Promise<{ count: number; ids: string[] }> {
  const { rows } = await db.query<{ count: number; ids: string[] }>(
    `WITH held AS (SELECT r.id FROM ${ident(schema)}.support_reservations r WHERE r.status = 'held' AND r.tenant = $1::text)
     SELECT (SELECT count(*) FROM held)::int AS count, ARRAY(SELECT id FROM held ORDER BY id LIMIT 100) AS ids`,
    [tenant],
  );
  return rows[0]!;
}
