import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { EXPIRED_INTENT_PREFIX, EXPIRED_TEMPLATE, type Hold, type HoldStatus } from '../model/hold-states.js';
import { intentsInsertExpired } from './outbox.js';
import { hookFailuresAllSql, hookFailuresWaitingSql } from './hook-failures.js';
import { afterCursorSql, cursorTimeSql, decodeCursor, pageOf } from '../model/cursor.js';
import { HOLD_ID_PATTERN } from '../model/hold-input.js';

/**
 * Every statement on support_reservations (holds), as small named functions. Values
 * are always parameters; only the schema identifier is spliced in (quoted).
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 */

export interface HoldRow {
  id: string;
  /** NULL once erased (a terminal hold only; see migrations/0009_retention.sql). */
  customer_email: string | null;
  status: HoldStatus;
  expires_at: Date;
  created_at: Date;
  confirmed_at: Date | null;
  cancelled_at: Date | null;
  expired_at: Date | null;
  metadata: Record<string, unknown>;
  request_hash: string;
  erased_at: Date | null;
  /** '' for the empty tenant (migrations/0020_tenants.sql). */
  tenant: string;
  /** migrations/0024_hold_lifecycle.sql */
  remind_before_seconds: number | null;
  notify_on_confirm: boolean;
  /** The W3C traceparent of the span it was created in, or null (migrations/0026_hold_traceparent.sql). */
  traceparent: string | null;
}

export function holdFromRow(row: HoldRow): Hold {
  return {
    id: row.id,
    customerEmail: row.customer_email,
    status: row.status,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    confirmedAt: row.confirmed_at,
    cancelledAt: row.cancelled_at,
    expiredAt: row.expired_at,
    metadata: row.metadata,
    tenant: row.tenant,
    erasedAt: row.erased_at,
    remindBeforeSeconds: row.remind_before_seconds,
    notifyOnConfirm: row.notify_on_confirm,
  };
}

export interface HoldInsert {
  id: string;
  customerEmail: string;
  expiresAt: Date | null;
  ttlSeconds: number | null;
  metadata: Record<string, unknown>;
  /** '' for the empty tenant. */
  tenant: string;
  remindBeforeSeconds: number | null;
  notifyOnConfirm: boolean;
  /** The creating span's W3C traceparent (observability/tracing.ts), or null; not part of the request's fingerprint. */
  traceparent: string | null;
}

/**
 * Insert unless the id exists; returns the row only when this call created it.
 * request_hash is the database's fingerprint of the request
 * (hold_request_hash, migrations/0011_create_hold.sql), the one the SQL entry
 * point create_hold computes too, so a retry through either path is recognised.
 * The hold's reminder, when it asks for one, is written in the same
 * statement (reminder_write_, migration 0024).
 */
export async function holdsInsert(db: Queryable, schema: string, hold: HoldInsert, now: Date | null): Promise<HoldRow | undefined> {
  const s = ident(schema);
  const { rows } = await db.query<HoldRow>(
    `WITH created AS (
       INSERT INTO ${s}.support_reservations
         (id, customer_email, status, expires_at, created_at, metadata, request_hash, tenant, remind_before_seconds, notify_on_confirm, traceparent)
       VALUES ($1, $2, 'held',
               coalesce($3::timestamptz, coalesce($4::timestamptz, now()) + make_interval(secs => $5::int)),
               coalesce($4::timestamptz, now()), $6::jsonb,
               ${s}.hold_request_hash($2, $3::timestamptz, $5::int, $6::jsonb), $7, $8::int, $9::boolean, $10::text)
       ON CONFLICT (id) DO NOTHING
       RETURNING *
     ), reminder AS (
       -- The same function create_hold and extend_hold_ write it with (migration 0024).
       SELECT ${s}.reminder_write_(c, coalesce($4::timestamptz, now())) FROM created c
     )
     SELECT * FROM created WHERE (SELECT count(*) FROM reminder) >= 0`,
    [
      hold.id,
      hold.customerEmail,
      hold.expiresAt,
      now,
      hold.ttlSeconds,
      JSON.stringify(hold.metadata),
      hold.tenant,
      hold.remindBeforeSeconds,
      hold.notifyOnConfirm,
      hold.traceparent,
    ],
  );
  return rows[0];
}

/**
 * The hold under `hold.id` and whether this same request created it: its
 * request_hash is this request's fingerprint, or `legacyHash` (the hash
 * createHold stored before migration 0011, computed in TypeScript), and it
 * has this request's tenant (compared beside the fingerprint, which leaves
 * the tenant out so that holds created before tenants keep their hash; as
 * create_hold does, migrations/0020_tenants.sql).
 */
export async function holdsGetForRetry(
  db: Queryable,
  schema: string,
  hold: HoldInsert,
  legacyHash: string,
): Promise<(HoldRow & { same_request: boolean }) | undefined> {
  const s = ident(schema);
  const { rows } = await db.query<HoldRow & { same_request: boolean }>(
    `SELECT r.*,
            coalesce(r.request_hash IN ($2, ${s}.hold_request_hash($3, $4::timestamptz, $5::int, $6::jsonb)), false)
              AND r.tenant = $7 AND r.remind_before_seconds IS NOT DISTINCT FROM $8::int AND r.notify_on_confirm = $9::boolean AS same_request
       FROM ${s}.support_reservations r
      WHERE r.id = $1`,
    [
      hold.id,
      legacyHash,
      hold.customerEmail,
      hold.expiresAt,
      hold.ttlSeconds,
      JSON.stringify(hold.metadata),
      hold.tenant,
      hold.remindBeforeSeconds,
      hold.notifyOnConfirm,
    ],
  );
  return rows[0];
}

export async function holdsGet(db: Queryable, schema: string, id: string): Promise<HoldRow | undefined> {
  const { rows } = await db.query<HoldRow>(`SELECT * FROM ${ident(schema)}.support_reservations WHERE id = $1`, [id]);
  return rows[0];
}

export interface HoldPage {
  holds: Hold[];
  /** Opaque cursor for the next (older) page, or null at the end. */
  nextCursor: string | null;
}

/**
 * Holds newest first, optionally of one status and of one tenant ('' is the
 * empty tenant's), keyset-paged (stable under inserts). A tenant filter
 * walks the same (created_at, id) index and skips the other tenants' rows.
 */
export async function holdsList(
  db: Queryable,
  schema: string,
  options: { status?: HoldStatus; tenant?: string; limit: number; cursor?: string },
): Promise<HoldPage> {
  const after = options.cursor ? decodeCursor(options.cursor, (key) => HOLD_ID_PATTERN.test(key)) : null;
  const { rows } = await db.query<HoldRow & { cursor_us: string }>(
    `SELECT r.*, ${cursorTimeSql('r.created_at')} AS cursor_us
       FROM ${ident(schema)}.support_reservations r
      WHERE ($1::text IS NULL OR r.status = $1) AND ($5::text IS NULL OR r.tenant = $5)
        AND ${afterCursorSql('r.created_at', 'r.id', '$2', '$3')}
      ORDER BY r.created_at DESC, r.id DESC
      LIMIT $4`,
    [options.status ?? null, after?.timeUs ?? null, after?.key ?? null, options.limit + 1, options.tenant ?? null],
  );
  const { page, nextCursor } = pageOf(rows, options.limit, (row) => row.id);
  return { holds: page.map(holdFromRow), nextCursor };
}

/**
 * Move a held hold to confirmed or cancelled, through settle_hold_
 * (migrations/0024_hold_lifecycle.sql, which confirm_hold and cancel_hold
 * call too): conditional on status = 'held', so if the expiry worker holds
 * the row lock this waits for it and then finds the hold expired, and
 * exactly one terminal state wins. In the same statement its pending
 * reminder is voided and, when the hold asked for one, the confirmation
 * intent written with its deadline (`noticeDeadlineSeconds` after now;
 * null: none). Undefined when nothing changed: no such hold, or not held.
 */
export async function holdsSettle(
  db: Queryable,
  schema: string,
  id: string,
  to: 'confirmed' | 'cancelled',
  now: Date | null,
  noticeDeadlineSeconds: number | null = null,
): Promise<HoldRow | undefined> {
  const s = ident(schema);
  const { rows } = await db.query<HoldRow>(
    `SELECT * FROM ${s}.settle_hold_($1, $2, $4::int, coalesce($3::timestamptz, now())) h WHERE h.id IS NOT NULL`,
    [id, to, now, noticeDeadlineSeconds],
  );
  return rows[0];
}

/**
 * Move a held hold's deadline later, through extend_hold_ (the function
 * extend_hold calls): under the row lock and only while held, so against
 * the expiry worker exactly one wins; the same deadline again changes
 * nothing; the extension is recorded (hold_extensions) and the pending
 * reminder moved. Undefined when nothing changed (no such hold, or not
 * held); raises 22023 naming the field for a bad deadline (one not later).
 */
export async function holdsExtend(
  db: Queryable,
  schema: string,
  id: string,
  to: { expiresAt: Date | null; ttlSeconds: number | null },
  now: Date | null,
): Promise<HoldRow | undefined> {
  const s = ident(schema);
  const { rows } = await db.query<HoldRow>(
    `SELECT * FROM ${s}.extend_hold_($1, $2::timestamptz, $3::int, coalesce($4::timestamptz, now())) h WHERE h.id IS NOT NULL`,
    [id, to.expiresAt, to.ttlSeconds, now],
  );
  return rows[0];
}

export interface ExpiredHold {
  id: string;
  intent_id: string | null;
  expires_at: Date;
  expired_at: Date;
  /** The hold's stored traceparent, for the expire span's link to it. */
  traceparent: string | null;
}

/**
 * The expiry lane's one statement per batch: lock up to `limit` due holds
 * (skipping rows other workers hold), move them to expired with one captured
 * now, and insert one intent per expired hold. The intent id is derived from
 * the hold id and ON CONFLICT DO NOTHING makes the unique key the final guard
 * against duplicates. Run it inside a transaction: the caller commits.
 */
export async function holdsExpireDue(
  db: Queryable,
  schema: string,
  limit: number,
  now: Date | null,
  /** NOTIFY this channel when intents were created (delivered at commit, so never for a rolled-back batch). */
  notifyChannel: string | null = null,
  /** Each expiry email's deadline, in seconds after the expiry (LEASEHOLD_NOTICE_DEADLINE_S); null: none. */
  noticeDeadlineSeconds: number | null = null,
  /** Only these holds (the expiry hook's bisection, holds/expire-hook.ts); null: any due hold. */
  only: readonly string[] | null = null,
): Promise<ExpiredHold[]> {
  const { text, values } = expireStatement(schema, limit, now, notifyChannel, noticeDeadlineSeconds, only, false);
  const { rows } = await db.query<ExpiredHold>(text, values);
  return rows;
}

/**
 * holdsExpireDue, committed on its own, and, when the batch was short, the
 * outlook the lane sleeps on (holdsDueOutlook) read in the same statement:
 * one statement a tick instead of two. `lockedElsewhere` is then the due
 * holds this statement saw but could not lock, and `nextDueInMs` is counted
 * from the statement's now. A full batch answers no outlook (null): the lane
 * runs again at once, and a backlog is not counted on every batch.
 */
export async function holdsExpireDueWithOutlook(
  db: Queryable,
  schema: string,
  limit: number,
  now: Date | null,
  notifyChannel: string | null,
  noticeDeadlineSeconds: number | null,
): Promise<{ expired: ExpiredHold[]; outlook: DueOutlook | null }> {
  const { text, values } = expireStatement(schema, limit, now, notifyChannel, noticeDeadlineSeconds, null, true);
  const { rows } = await db.query<ExpiredHold & { outlook_locked: number | null; outlook_next_in_ms: number | null }>(text, values);
  const expired = rows.filter((r) => r.id !== null).map(({ outlook_locked: _l, outlook_next_in_ms: _n, ...hold }) => hold);
  const first = rows[0];
  const outlook = first && first.outlook_locked !== null ? { lockedElsewhere: first.outlook_locked, nextDueInMs: first.outlook_next_in_ms } : null;
  return { expired, outlook };
}

function expireStatement(
  schema: string,
  limit: number,
  now: Date | null,
  notifyChannel: string | null,
  noticeDeadlineSeconds: number | null,
  only: readonly string[] | null,
  withOutlook: boolean,
): { text: string; values: unknown[] } {
  const s = ident(schema);
  const picked = `-- IN, not a join with intents: the planner estimates both CTEs at one
     -- row and nested-loops them (250,000 comparisons a batch, 20 of 33 ms
     -- at 1M rows in the table); an uncorrelated IN is a hashed subplan.
     SELECT e.id,
            CASE WHEN e.id IN (SELECT i.reservation_id FROM intents i) THEN $4::text || e.id END AS intent_id,
            e.expires_at, e.expired_at, e.traceparent
       FROM expired e
      WHERE (SELECT count(*) FROM notified) >= 0`;
  const ctes = `WITH clock AS (
       SELECT coalesce($2::timestamptz, now()) AS now
     ), due AS (
       SELECT r.ctid
         FROM ${s}.support_reservations r, clock
        WHERE r.status = 'held' AND r.expires_at <= clock.now
          -- Holds whose expiry hook failed wait out their back-off
          -- (migration 0029). An uncorrelated subquery, read once per
          -- statement over the retry index (empty in the usual case) into
          -- a hash that each due hold is looked up in (NOT IN: both ids are
          -- NOT NULL), so the due index scan and its plan stay as they were
          -- and a thousand failing holds cost no more per hold than one
          -- (<> ALL of an array compared each hold with every failure).
          AND r.id NOT IN (${hookFailuresWaitingSql(s, 'coalesce($2::timestamptz, now())')})${only ? `
          AND r.id = ANY ($7::text[])` : ''}
        ORDER BY r.expires_at
        LIMIT $1
        FOR UPDATE OF r SKIP LOCKED
     ), expired AS (
       -- Update the rows just locked by their address (a TID scan; the ctid
       -- is stable because we hold the row lock until commit), so no
       -- statistics can change the plan. Measured with 1M finished holds and
       -- statistics taken before a 20k backlog: joined with due by id, the
       -- planner hash-joined the ids against a scan of the whole table
       -- (~0.5 s a batch, 1,100 holds/s); by id = ANY or with a plain
       -- status = 'held' guard it walked every held row through the partial
       -- index (45-110 ms a batch). The guard is written IS TRUE (the same
       -- meaning: status is NOT NULL) so that it cannot match that index.
       UPDATE ${s}.support_reservations r
          SET status = 'expired', expired_at = clock.now
         FROM clock
        WHERE r.ctid = ANY (ARRAY(SELECT due.ctid FROM due)) AND (r.status = 'held') IS TRUE
        RETURNING r.id, r.customer_email, r.tenant, r.expires_at, r.expired_at, r.traceparent
     ), intents AS (
       ${intentsInsertExpired(s, 'expired', '$4::text', '$5::text', '$6::int')}
     ), notified AS (
       -- In the statement rather than a round trip of its own after it (4%
       -- of a 500-hold batch). Referenced below so that it runs.
       SELECT pg_notify($3, '') FROM (SELECT 1 FROM intents LIMIT 1) created WHERE $3::text IS NOT NULL
     )`;
  if (!withOutlook) return { text: `${ctes}\n     ${picked}`, values: [limit, now, notifyChannel, EXPIRED_INTENT_PREFIX, EXPIRED_TEMPLATE, noticeDeadlineSeconds, ...(only ? [only] : [])] };
  // The outlook's row comes first and alone when nothing expired; the
  // OFFSET 0 keeps the expired rows' joins planned on their own.
  const outlook = `, outlook AS MATERIALIZED (
       -- Counted only for a short batch (the CASE reads its subquery only then):
       -- due holds this statement saw but did not lock are another worker's.
       SELECT CASE WHEN (SELECT count(*) FROM due) < $1 THEN
                (SELECT count(*) FROM (
                   SELECT 1 FROM ${s}.support_reservations r, clock
                    WHERE r.status = 'held' AND r.expires_at <= clock.now
                      AND r.id NOT IN (${hookFailuresWaitingSql(s, 'coalesce($2::timestamptz, now())')}) LIMIT 10000) d)::int
                - (SELECT count(*) FROM due)::int END AS locked,
              CASE WHEN (SELECT count(*) FROM due) < $1 THEN
                (SELECT extract(epoch FROM min(r.expires_at) - (SELECT clock.now FROM clock)) * 1000
                   FROM ${s}.support_reservations r
                  WHERE r.status = 'held' AND r.expires_at > (SELECT clock.now FROM clock))::float8 END AS next_in_ms
     )`;
  return {
    text: `${ctes}${outlook}
     SELECT o.locked AS outlook_locked, o.next_in_ms AS outlook_next_in_ms, x.* FROM outlook o LEFT JOIN (${picked} OFFSET 0) x ON true`,
    values: [limit, now, notifyChannel, EXPIRED_INTENT_PREFIX, EXPIRED_TEMPLATE, noticeDeadlineSeconds, ...(only ? [only] : [])],
  };
}

export interface DueOutlook {
  /** Due holds still held right now: locked by another worker's open transaction. */
  lockedElsewhere: number;
  /** Milliseconds until the next hold falls due, or null when none are held. */
  nextDueInMs: number | null;
}

/** After a non-full batch: how much contention, and how long to sleep. */
export async function holdsDueOutlook(db: Queryable, schema: string, now: Date | null): Promise<DueOutlook> {
  const s = ident(schema);
  const { rows } = await db.query<{ locked: number; next_in_ms: number | null }>(
    `SELECT
       (SELECT count(*) FROM (
          SELECT 1 FROM ${s}.support_reservations r
           WHERE r.status = 'held' AND r.expires_at <= coalesce($1::timestamptz, now())
             AND r.id NOT IN (${hookFailuresWaitingSql(s, 'coalesce($1::timestamptz, now())')}) LIMIT 10000) d)::int AS locked,
       (SELECT extract(epoch FROM min(r.expires_at) - coalesce($1::timestamptz, now())) * 1000
          FROM ${s}.support_reservations r
         WHERE r.status = 'held' AND r.expires_at > coalesce($1::timestamptz, now()))::float8 AS next_in_ms`,
    [now],
  );
  const row = rows[0]!;
  return { lockedElsewhere: row.locked, nextDueInMs: row.next_in_ms };
}

/**
 * Due holds and how late the oldest is at `now` (an SQL expression), as one
 * row (`due_holds`, `due_age`) through the due index, for the status
 * snapshot (read/stats.ts), which reads it beside the other lane numbers.
 * Holds whose expiry hook failed are left out: they wait on the
 * application's function, not on the lane, and are counted apart
 * (`hookFailuresCountSql`), so one bad hold does not make the lane look late.
 */
export const holdsDueSql = (s: string, now: string): string =>
  `SELECT count(*)::int AS due_holds, extract(epoch FROM ${now} - min(r.expires_at))::float8 AS due_age
     FROM ${s}.support_reservations r
    WHERE r.status = 'held' AND r.expires_at <= ${now}
      AND r.id NOT IN (${hookFailuresAllSql(s)})`;

export const holdsDueFromRow = (row: Record<string, unknown>): { ageSeconds: number; due: number } => ({
  ageSeconds: Math.max(0, (row['due_age'] as number | null) ?? 0),
  due: (row['due_holds'] as number | null) ?? 0,
});

