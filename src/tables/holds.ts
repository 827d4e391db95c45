import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import type { Hold, HoldStatus } from '../model/hold-states.js';
import { afterCursorSql, cursorTimeSql, decodeCursor, pageOf } from '../model/cursor.js';
import { HOLD_ID_PATTERN } from '../model/hold-input.js';

/**
 * Every statement on support_reservations (holds), as small named functions. Values
 * are always parameters; only the schema identifier is spliced in (quoted).
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 * The application's statements are here; the expiry lane's (expire, its
 * outlook, the due count) are in ./holds/expiry.ts, re-exported below.
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

export * from './holds/expiry.js';
