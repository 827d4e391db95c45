import type { Queryable } from '../../db/pool.js';
import { ident } from '../../db/pool.js';
import { queryPrepared } from '../../db/prepared.js';
import { EXPIRED_INTENT_PREFIX, EXPIRED_TEMPLATE } from '../../model/hold-states.js';
import {
  handedIntentFromRow,
  handOffAnswerSql,
  handOffDecisionSql,
  handOffInsertColumns,
  handOffParams,
  handOffValues,
  handOffWritesSql,
  intentsInsertExpired,
  type HandOffLease,
  type LeasedIntent,
} from '../outbox.js';
import { hookFailuresAllSql, hookFailuresWaitingSql } from '../hook-failures.js';
import { remember } from '../../remember.js';

/**
 * support_reservations, the expiry lane's statements (tables/holds.ts is the
 * table's module and re-exports these): expire the due holds with their
 * intents, the outlook the lane sleeps on, and the due count the status
 * snapshot reads.
 */

/** Where the expiry statement announces the intents it created, and with what payload ('' unless the process names itself: db/listener.ts ownPayload). */
export interface IntentsNotify {
  channel: string;
  payload?: string;
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
  /** NOTIFY this channel when intents were created (delivered at commit, so never for a rolled-back batch), with this payload (default ''). */
  notify: IntentsNotify | null = null,
  /** Each expiry email's deadline, in seconds after the expiry (LEASEHOLD_NOTICE_DEADLINE_S); null: none. */
  noticeDeadlineSeconds: number | null = null,
  /** Only these holds (the expiry hook's bisection, holds/expire-hook.ts); null: any due hold. */
  only: readonly string[] | null = null,
): Promise<ExpiredHold[]> {
  const { text, values } = expireStatement(schema, limit, now, notify, noticeDeadlineSeconds, only, false);
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
 *
 * With `handOff`, the intents are leased in the same statement to the
 * delivery worker that asked (tables/outbox/hand-off.ts says when they
 * are): `handed` has them as its lease would, and the bucket time of the
 * permits they spent; null when they were created pending.
 */
export async function holdsExpireDueWithOutlook(
  db: Queryable,
  schema: string,
  limit: number,
  now: Date | null,
  notify: IntentsNotify | null,
  noticeDeadlineSeconds: number | null,
  handOff: HandOffLease | null = null,
): Promise<{ expired: ExpiredHold[]; outlook: DueOutlook | null; handed: HandedIntents | null }> {
  const { text, values } = expireStatement(schema, limit, now, notify, noticeDeadlineSeconds, null, true, handOff);
  // Prepared on a pool (db/prepared.ts): its plan reads the clock at run time either way.
  const { rows } = await queryPrepared<Record<string, unknown>>(db, text, values);
  const expired: ExpiredHold[] = [];
  const intents: LeasedIntent[] = [];
  for (const row of rows) {
    if (row['id'] === null) continue;
    expired.push({
      id: row['id'] as string,
      intent_id: row['intent_id'] as string | null,
      expires_at: row['expires_at'] as Date,
      expired_at: row['expired_at'] as Date,
      traceparent: row['traceparent'] as string | null,
    });
    const intent = handOff ? handedIntentFromRow(row, EXPIRED_TEMPLATE) : undefined;
    if (intent) intents.push(intent);
  }
  const first = rows[0];
  const locked = first?.['outlook_locked'] as number | null | undefined;
  const outlook = first && locked !== null && locked !== undefined ? { lockedElsewhere: locked, nextDueInMs: first['outlook_next_in_ms'] as number | null } : null;
  const handed = intents.length > 0 ? { intents, bucketTime: first!['handed_bucket_time'] as string } : null;
  return { expired, outlook, handed };
}

/** The intents an expiry statement leased to its own process's delivery worker. */
export interface HandedIntents {
  intents: LeasedIntent[];
  /** The bucket time of the permits they spent (a refund applies only while it is still the bucket's). */
  bucketTime: string;
}

function expireStatement(
  schema: string,
  limit: number,
  now: Date | null,
  notify: IntentsNotify | null,
  noticeDeadlineSeconds: number | null,
  only: readonly string[] | null,
  withOutlook: boolean,
  handOff: HandOffLease | null = null,
): { text: string; values: unknown[] } {
  const values = [
    limit,
    now,
    notify?.channel ?? null,
    EXPIRED_INTENT_PREFIX,
    EXPIRED_TEMPLATE,
    noticeDeadlineSeconds,
    notify?.payload ?? '',
    ...(only ? [only] : []),
    ...(handOff ? handOffValues(handOff, schema) : []),
  ];
  return { text: expireText(schema, only !== null, withOutlook, handOff !== null), values };
}

/**
 * The statement's text, built once per schema and shape: it runs a hundred
 * times a second, and the same string each time is hashed once for its
 * prepared statement's name (db/prepared.ts) instead of copied and hashed
 * on every batch.
 */
const expireTexts = new Map<string, string>();
function expireText(schema: string, only: boolean, withOutlook: boolean, handOff: boolean): string {
  return remember(expireTexts, `${schema}\0${only}\0${withOutlook}\0${handOff}`, () => buildExpireText(schema, only, withOutlook, handOff), 64);
}

function buildExpireText(schema: string, only: boolean, withOutlook: boolean, handOff: boolean): string {
  const s = ident(schema);
  // The hand-off's parameters follow the others ($8 on: `only` is never given with it).
  const ho = handOff ? handOffParams(8) : null;
  const answer = ho ? handOffAnswerSql(s) : null;
  const picked = `-- IN, not a join with intents: the planner estimates both CTEs at one
     -- row and nested-loops them (250,000 comparisons a batch, 20 of 33 ms
     -- at 1M rows in the table); an uncorrelated IN is a hashed subplan.
     SELECT e.id,
            CASE WHEN e.id IN (SELECT i.reservation_id FROM intents i) THEN $4::text || e.id END AS intent_id,
            e.expires_at, e.expired_at, e.traceparent${answer ? `, ${answer.columns}` : ''}
       FROM expired e${answer ? `
       ${answer.joins}` : ''}
      WHERE (SELECT count(*) FROM notified) >= 0`;
  const ctes = `WITH clock AS (
       SELECT coalesce($2::timestamptz, now()) AS now
     ), due AS (
       SELECT r.ctid
         FROM ${s}.support_reservations r
        -- The clock as a scalar subquery (an InitPlan), not a join: joined,
        -- the planner walked the due index from its start with the bound as
        -- a join filter, and a short batch (the usual one) read every held
        -- hold, due or not: 60 ms a batch with 100,000 holds held for later.
        WHERE r.status = 'held' AND r.expires_at <= (SELECT clock.now FROM clock)
          -- Holds whose expiry hook failed wait out their back-off
          -- (migration 0029). An uncorrelated subquery, read once per
          -- statement over the retry index (empty in the usual case) into
          -- a hash that each due hold is looked up in (NOT IN: both ids are
          -- NOT NULL), so the due index scan and its plan stay as they were
          -- and a thousand failing holds cost no more per hold than one
          -- (<> ALL of an array compared each hold with every failure).
          AND r.id NOT IN (${hookFailuresWaitingSql(s, 'coalesce($2::timestamptz, now())')})${only ? `
          AND r.id = ANY ($8::text[])` : ''}
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
        RETURNING r.id, r.customer_email, r.tenant, r.expires_at, r.expired_at, r.traceparent${ho ? ', r.metadata, r.confirmed_at' : ''}
     ), ${ho ? `${handOffDecisionSql(s, ho, 'expired', '(SELECT clock.now FROM clock)', '$2::timestamptz')}, ` : ''}intents AS (
       ${intentsInsertExpired(s, 'expired', '$4::text', '$5::text', '$6::int', ho ? handOffInsertColumns(ho) : undefined)}
     ), ${ho ? `${handOffWritesSql(s, ho)}, ` : ''}notified AS (
       -- In the statement rather than a round trip of its own after it (4%
       -- of a 500-hold batch). Referenced below so that it runs. Intents
       -- handed off are leased already: they wake nobody.
       SELECT pg_notify($3, $7::text) FROM (SELECT 1 FROM intents${ho ? ' WHERE NOT intents.handed' : ''} LIMIT 1) created WHERE $3::text IS NOT NULL
     )`;
  if (!withOutlook) return `${ctes}\n     ${picked}`;
  // The outlook's row comes first and alone when nothing expired; the
  // OFFSET 0 keeps the expired rows' joins planned on their own.
  const outlook = `, outlook AS MATERIALIZED (
       -- Counted only for a short batch (the CASE reads its subqueries only
       -- then): due holds this statement saw but did not lock are another worker's.
       SELECT CASE WHEN (SELECT count(*) FROM due) < $1 THEN ${dueHeldSql(s, '(SELECT clock.now FROM clock)')} - (SELECT count(*) FROM due)::int END AS locked,
              CASE WHEN (SELECT count(*) FROM due) < $1 THEN ${nextDueInMsSql(s, '(SELECT clock.now FROM clock)')} END AS next_in_ms
     )`;
  return `${ctes}${outlook}
     SELECT o.locked AS outlook_locked, o.next_in_ms AS outlook_next_in_ms, x.* FROM outlook o LEFT JOIN (${picked} OFFSET 0) x ON true`;
}

/** SQL expression: due holds still held at `now` (not waiting on their hook's back-off), counted up to 10,000. */
const dueHeldSql = (s: string, now: string): string =>
  `(SELECT count(*) FROM (
      SELECT 1 FROM ${s}.support_reservations r
       WHERE r.status = 'held' AND r.expires_at <= ${now}
         AND r.id NOT IN (${hookFailuresWaitingSql(s, now)}) LIMIT 10000) d)::int`;

/** SQL expression: milliseconds from `now` until the next held hold falls due, NULL when none will. */
const nextDueInMsSql = (s: string, now: string): string =>
  `(SELECT extract(epoch FROM min(r.expires_at) - ${now}) * 1000
      FROM ${s}.support_reservations r
     WHERE r.status = 'held' AND r.expires_at > ${now})::float8`;

export interface DueOutlook {
  /** Due holds still held right now: locked by another worker's open transaction. */
  lockedElsewhere: number;
  /** Milliseconds until the next hold falls due, or null when none are held. */
  nextDueInMs: number | null;
}

/** After a non-full batch: how much contention, and how long to sleep. */
export async function holdsDueOutlook(db: Queryable, schema: string, now: Date | null): Promise<DueOutlook> {
  const s = ident(schema);
  const at = 'coalesce($1::timestamptz, now())';
  const { rows } = await db.query<{ locked: number; next_in_ms: number | null }>(`SELECT ${dueHeldSql(s, at)} AS locked, ${nextDueInMsSql(s, at)} AS next_in_ms`, [now]);
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

