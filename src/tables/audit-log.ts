import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import type { AuditAction, AuditActor } from '../model/audit-actions.js';
import { cursorTimeSql, decodeCursor, pageOf } from '../model/cursor.js';

/**
 * Every statement on `audit_log` (migration 0025). Entries are written by
 * the change they record, on the same client inside the same transaction
 * (ops/), so a change and its entry commit together; only refused calls
 * (server/auth.ts) and a finished retention run write one on their own.
 */

export interface AuditEntry {
  id: number;
  at: Date;
  actor: string;
  action: AuditAction;
  target: string | null;
  requestId: string | null;
  before: unknown;
  after: unknown;
  detail: unknown;
}

export interface AuditRecord {
  action: AuditAction;
  target?: string | null;
  before?: unknown;
  after?: unknown;
  detail?: unknown;
}

interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: AuditAction;
  target: string | null;
  request_id: string | null;
  before: unknown;
  after: unknown;
  detail: unknown;
  cursor_us: string;
}

const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));

/** Record one change. `now` is the injected clock's time; null: the transaction's. */
export async function auditInsert(db: Queryable, schema: string, actor: AuditActor, record: AuditRecord, now: Date | null = null): Promise<void> {
  await db.query(
    `INSERT INTO ${ident(schema)}.audit_log (at, actor, action, target, request_id, before, after, detail)
     VALUES (coalesce($1::timestamptz, now()), $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8::jsonb)`,
    [now, actor.name.slice(0, 200), record.action, record.target?.slice(0, 500) ?? null, actor.requestId?.slice(0, 200) ?? null, json(record.before), json(record.after), json(record.detail)],
  );
}

export interface AuditPage {
  entries: AuditEntry[];
  /** Opaque cursor for the next (older) page, or null at the end. */
  nextCursor: string | null;
}

/** Newest first, keyset-paged on (at, id); `since` keeps entries at or after it, `action` one action's. */
export async function auditList(
  db: Queryable,
  schema: string,
  options: { limit: number; since?: Date; action?: AuditAction; cursor?: string },
): Promise<AuditPage> {
  const after = options.cursor ? decodeCursor(options.cursor, (key) => /^\d{1,19}$/.test(key)) : null;
  const { rows } = await db.query<AuditRow>(
    `SELECT id::text, at, actor, action, target, request_id, before, after, detail, ${cursorTimeSql('at')} AS cursor_us
       FROM ${ident(schema)}.audit_log
      WHERE ($1::timestamptz IS NULL OR at >= $1)
        AND ($2::text IS NULL OR action = $2)
        AND ($3::bigint IS NULL OR (at, id) < (timestamptz 'epoch' + $3::bigint * interval '1 microsecond', $4::bigint))
      ORDER BY at DESC, id DESC
      LIMIT $5`,
    [options.since ?? null, options.action ?? null, after?.timeUs ?? null, after?.key ?? null, options.limit + 1],
  );
  const { page, nextCursor } = pageOf(rows, options.limit, (row) => row.id);
  return {
    entries: page.map((row) => ({
      id: Number(row.id),
      at: row.at,
      actor: row.actor,
      action: row.action,
      target: row.target,
      requestId: row.request_id,
      before: row.before,
      after: row.after,
      detail: row.detail,
    })),
    nextCursor,
  };
}

/** Delete at most `limit` entries older than `days` days (retention's audit pass); how many went. */
export async function auditPrune(db: Queryable, schema: string, options: { now: Date | null; days: number; limit: number }): Promise<number> {
  const s = ident(schema);
  const { rowCount } = await db.query(
    `DELETE FROM ${s}.audit_log WHERE id IN (
       SELECT id FROM ${s}.audit_log
        WHERE at < coalesce($1::timestamptz, now()) - make_interval(days => $2::int)
        ORDER BY at, id LIMIT $3 FOR UPDATE SKIP LOCKED)`,
    [options.now, options.days, options.limit],
  );
  return rowCount ?? 0;
}
