import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';

/**
 * expire_hook_failures (migrations/0029_expire_hook_failures.sql): the
 * holds whose expiry hook failed by itself, each kept `held` until its
 * retry_at. Written by the expiry lane (holds/expire-hook.ts) in its own
 * transaction; read by the expiry statement (`hookFailuresWaitingSql`), the
 * due-hold numbers and /v1/status. `s` is the quoted schema.
 */

export interface HookFailure {
  holdId: string;
  attempts: number;
  firstFailedAt: Date;
  lastFailedAt: Date;
  retryAt: Date;
  /** SQLSTATE of the last failure (57014: timed out), or null. */
  code: string | null;
  error: string;
}

interface HookFailureRow {
  hold_id: string;
  attempts: number;
  first_failed_at: Date;
  last_failed_at: Date;
  retry_at: Date;
  last_code: string | null;
  last_error: string;
}

const fromRow = (r: HookFailureRow): HookFailure => ({
  holdId: r.hold_id,
  attempts: r.attempts,
  firstFailedAt: r.first_failed_at,
  lastFailedAt: r.last_failed_at,
  retryAt: r.retry_at,
  code: r.last_code,
  error: r.last_error,
});

/**
 * The ids of the holds still backing off at `now` (an SQL expression that
 * must not name an outer relation, so the expiry statement runs it once, as
 * an InitPlan, and not once per row): one end of expire_hook_failures_retry.
 */
export const hookFailuresWaitingSql = (s: string, now: string): string =>
  `SELECT f.hold_id FROM ${s}.expire_hook_failures f WHERE f.retry_at > ${now}`;

/** Every hold with a failure on record, backing off or due for its retry (the due-hold numbers leave them out: they wait on the application, not the lane). */
export const hookFailuresAllSql = (s: string): string => `SELECT f.hold_id FROM ${s}.expire_hook_failures f`;

/**
 * The held holds waiting on their hook, as one row (`hook_failing`), for the
 * lane snapshot (read/stats.ts). A row whose hold was confirmed or cancelled
 * meanwhile is not counted.
 */
export const hookFailuresCountSql = (s: string): string =>
  `SELECT count(*)::int AS hook_failing
     FROM ${s}.expire_hook_failures f JOIN ${s}.support_reservations r ON r.id = f.hold_id
    WHERE r.status = 'held'`;

export const hookFailuresCountFromRow = (row: Record<string, unknown>): number => (row['hook_failing'] as number | null) ?? 0;

/** A statement fragment deleting the rows of the holds `idsParam` (a text[] placeholder) whose hook just succeeded; a CTE body. */
export const hookFailuresClearSql = (s: string, idsParam: string): string =>
  `DELETE FROM ${s}.expire_hook_failures f WHERE f.hold_id = ANY (${idsParam}) RETURNING f.hold_id`;

/**
 * Record one more failed call for each hold: attempts + 1, and its next try
 * after an exponential back-off (`baseMs` doubling per attempt, at most
 * `maxMs`), jittered to between half and all of it so holds that failed
 * together do not come back together. Returns the rows as now stored.
 */
export async function hookFailuresRecord(
  db: Queryable,
  schema: string,
  failures: ReadonlyArray<{ holdId: string; code: string | null; error: string }>,
  now: Date | null,
  backoff: { baseMs: number; maxMs: number },
): Promise<HookFailure[]> {
  if (failures.length === 0) return [];
  const s = ident(schema);
  const { rows } = await db.query<HookFailureRow>(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS i(hold_id, code, error)
     ), clock AS (
       SELECT coalesce($4::timestamptz, now()) AS now
     )
     INSERT INTO ${s}.expire_hook_failures AS f (hold_id, attempts, first_failed_at, last_failed_at, retry_at, last_code, last_error)
     SELECT i.hold_id, 1, clock.now, clock.now,
            clock.now + make_interval(secs => least($6::float8, $5::float8) / 1000 * (0.5 + random() / 2)),
            i.code, i.error
       FROM input i, clock
       -- A hold deleted meanwhile has nothing left to retry.
      WHERE EXISTS (SELECT 1 FROM ${s}.support_reservations r WHERE r.id = i.hold_id)
     ON CONFLICT (hold_id) DO UPDATE
        SET attempts = f.attempts + 1,
            last_failed_at = excluded.last_failed_at,
            retry_at = excluded.last_failed_at
                       + make_interval(secs => least($6::float8, $5::float8 * 2 ^ least(f.attempts, 40)) / 1000 * (0.5 + random() / 2)),
            last_code = excluded.last_code,
            last_error = excluded.last_error
     RETURNING f.*`,
    [failures.map((f) => f.holdId), failures.map((f) => f.code), failures.map((f) => f.error), now, backoff.baseMs, backoff.maxMs],
  );
  return rows.map(fromRow);
}

/** The held holds waiting on their hook, longest-failing first, at most `limit` (for /v1/status and the dashboard). */
export async function hookFailuresList(db: Queryable, schema: string, limit = 20): Promise<HookFailure[]> {
  const s = ident(schema);
  const { rows } = await db.query<HookFailureRow>(
    `SELECT f.* FROM ${s}.expire_hook_failures f JOIN ${s}.support_reservations r ON r.id = f.hold_id
      WHERE r.status = 'held'
      ORDER BY f.first_failed_at, f.hold_id
      LIMIT $1`,
    [limit],
  );
  return rows.map(fromRow);
}
