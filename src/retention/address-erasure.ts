import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { ADDRESS_IN_TEXT, ERASED, ERASED_ON_REQUEST, RETENTION_TABLES, holdsPersonalData, type RetentionTables } from './policy.js';

import { HOLD_ERASURE, NOW, setClause, stillPersonal, type TableCounts, erasureCloseAttemptsSql, erasureIntentsSql } from './sql.js';

export interface AddressErasure {
  /** Rows changed (or, for tables erased by deletion, deleted) per table. */
  counts: TableCounts;
  /** Pending intents of the address, rejected so nothing more is sent. */
  rejectedPending: number;
  /** Of those, how many were leased: a send may have been in flight and may still arrive. */
  inFlight: number;
  /** Held holds of the address: live reservations, left untouched (see docs). */
  heldHoldIds: string[];
}

/**
 * Erase one address everywhere it is stored, in one statement: its terminal
 * holds and their stories (a pending intent is rejected with reason "erased
 * on request" so nothing is sent; an attempt still open is closed as
 * abandoned), intents sent to it, every story child, and standalone rows
 * matching the address or its hash. Finds the holds and intents by a scan
 * (there is no index on addresses, on purpose: see docs/operations.md).
 * Held holds are reported, not changed. Run it in a transaction.
 */
export async function addressErase(
  db: Queryable,
  schema: string,
  address: string,
  options: { now: Date | null; tables?: RetentionTables },
): Promise<AddressErasure> {
  const s = ident(schema);
  const tables = options.tables ?? RETENTION_TABLES;
  const target = `lower(btrim($2::text))`;
  const mine = (alias: string, columns: string[] | undefined) =>
    (columns ?? []).map((c) => ` OR lower(btrim(${alias}.${ident(c)})) = ${target}`).join('');
  const children = tables.storyChildren.map((child, i) => {
    const t = `${s}.${ident(child.table)}`;
    const rows = `(t.intent_id = ANY (ARRAY(SELECT id FROM intents))${mine('t', child.addressColumns)})`;
    if (child.erase === 'delete') return `c${i} AS (DELETE FROM ${t} t WHERE ${rows} RETURNING 1)`;
    return `c${i} AS (UPDATE ${t} t SET ${setClause(child.erase, 't', '$3')} WHERE ${rows} AND ${stillPersonal('t', child.erase, '$3')} RETURNING 1)`;
  });
  const erasable = tables.standalone.filter(holdsPersonalData);
  const standalone = erasable.map((table, i) => {
    const t = `${s}.${ident(table.table)}`;
    const hash = table.addressHashColumn ? ` OR t.${ident(table.addressHashColumn)} = encode(sha256(convert_to(${target}, 'UTF8')), 'hex')` : '';
    return `s${i} AS (UPDATE ${t} t SET ${setClause(table.erase, 't', '$3')}
        WHERE (false${mine('t', table.addressColumns)}${hash}) AND ${stillPersonal('t', table.erase, '$3')} RETURNING 1)`;
  });
  const { rows } = await db.query<Record<string, unknown>>(
    `WITH held AS (
       SELECT r.id FROM ${s}.support_reservations r WHERE lower(btrim(r.customer_email)) = ${target} AND r.status = 'held'
     ), roots AS MATERIALIZED (
       SELECT r.id FROM ${s}.support_reservations r
        WHERE lower(btrim(r.customer_email)) = ${target} AND r.status <> 'held'
          FOR UPDATE OF r
     ), intents AS MATERIALIZED (
       SELECT o.id, o.state, o.lease_token IS NOT NULL AS leased FROM ${s}.email_outbox o
        WHERE o.reservation_id = ANY (ARRAY(SELECT id FROM roots)) OR lower(btrim(o.recipient)) = ${target}
          FOR UPDATE OF o
     ), pending AS (
       SELECT id, leased FROM intents WHERE state = 'pending'
     ), closed AS (
       ${erasureCloseAttemptsSql(s)}
     ), ${[...children, ...standalone].map((c) => c + ',').join('\n     ')} intents_done AS (
       ${erasureIntentsSql(s, '$3')}
     ), holds_done AS (
       UPDATE ${s}.support_reservations r SET ${HOLD_ERASURE('$3')}
        WHERE r.id = ANY (ARRAY(SELECT id FROM roots))
        RETURNING 1
     )
     SELECT (SELECT count(*) FROM holds_done)::int AS holds,
            (SELECT count(*) FROM intents_done)::int AS intents,
            (SELECT count(*) FROM closed)::int AS closed,
            (SELECT count(*) FROM pending)::int AS rejected,
            (SELECT count(*) FROM pending WHERE leased)::int AS in_flight,
            ${[...children.map((_, i) => `(SELECT count(*) FROM c${i})::int AS c${i}`), ...standalone.map((_, i) => `(SELECT count(*) FROM s${i})::int AS s${i}`)].map((c) => c + ',').join('\n            ')}
            ARRAY(SELECT id FROM held ORDER BY id LIMIT 100) AS held_ids`,
    [options.now, address, ADDRESS_IN_TEXT],
  );
  const row = rows[0]! as Record<string, number> & { held_ids: string[] };
  const counts: TableCounts = {};
  tables.storyChildren.forEach((child, i) => (counts[child.table] = (counts[child.table] ?? 0) + row[`c${i}`]!));
  // Closing an open attempt also takes the address-free reason, so it counts as a change.
  counts.email_attempts = (counts.email_attempts ?? 0) + row.closed!;
  counts.email_outbox = row.intents!;
  counts.support_reservations = row.holds!;
  erasable.forEach((table, i) => (counts[table.table] = (counts[table.table] ?? 0) + row[`s${i}`]!));
  return { counts, rejectedPending: row.rejected!, inFlight: row.in_flight!, heldHoldIds: row.held_ids };
}
