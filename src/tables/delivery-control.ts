import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { PAUSED_BY_OPERATOR, validatePauseReason } from '../model/delivery-policy.js';

/**
 * Every statement on delivery_control: the one row that says whether
 * delivery is paused fleet-wide, by whom, why and until when. Workers read
 * it with every permit request (tables/rate-limiter.ts), so a change takes
 * effect fleet-wide within a second, with no deploy.
 *
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 */

export interface DeliveryControl {
  paused: boolean;
  reason: string | null;
  pausedBy: string | null;
  pausedAt: Date | null;
  pausedUntil: Date | null;
}

/**
 * Whether the pause in row `c` is in force at `now` (SQL expressions): a
 * pause whose `paused_until` has passed reads as resumed, with no writer
 * needed to lift it. The one definition; the limiter's take uses it too.
 */
export const pausedNow = (c: string, now: string): string =>
  `(${c}.paused AND (${c}.paused_until IS NULL OR ${c}.paused_until > ${now}))`;

export interface ControlRow {
  paused: boolean;
  reason: string | null;
  paused_by: string | null;
  paused_at: Date | null;
  paused_until: Date | null;
}

export const controlFromRow = (row: ControlRow): DeliveryControl => ({
  paused: row.paused,
  reason: row.reason,
  pausedBy: row.paused_by,
  pausedAt: row.paused_at,
  pausedUntil: row.paused_until,
});

/** The one row at `now` (an SQL expression): deliveryControlGet reads it alone, the status snapshot (read/stats.ts) beside the others. */
export const deliveryControlSql = (s: string, now: string): string =>
  `SELECT ${pausedNow('c', now)} AS paused, c.reason, c.paused_by, c.paused_at, c.paused_until FROM ${s}.delivery_control c`;

export async function deliveryControlGet(db: Queryable, schema: string, now: Date | null = null): Promise<DeliveryControl> {
  const { rows } = await db.query<ControlRow>(deliveryControlSql(ident(schema), 'coalesce($1::timestamptz, now())'), [now]);
  return controlFromRow(rows[0]!);
}

/**
 * Pause delivery fleet-wide. `by` says who (`operator`, or a provider name
 * when a provider answer paused it); `untilMs` makes the pause lift itself.
 *
 * Precedence, because a send still in flight when an operator pauses can
 * come back with a provider's pause:
 * - an operator's pause replaces whatever pause is in force (the operator's
 *   latest word wins, with its own reason and end);
 * - a provider's pause never changes an operator's pause in force: not its
 *   reason, not its end (a provider condition still there when the
 *   operator's pause ends is met again on the next send);
 * - a provider's pause on top of a provider's pause may only lengthen it:
 *   the later end wins (no end is latest), with its reason.
 * `paused_at` stays when delivery first stopped. One statement, evaluated
 * against the row under its lock, so concurrent pauses cannot interleave.
 */
export async function deliveryPause(
  db: Queryable,
  schema: string,
  pause: { reason: string; by: string; untilMs?: number; now?: Date | null },
): Promise<DeliveryControl> {
  const reason = validatePauseReason(pause.reason);
  const s = ident(schema);
  const { rows } = await db.query<ControlRow>(
    `WITH clock AS (
       SELECT coalesce($5::timestamptz, now()) AS now
     ), cur AS (
       SELECT c.id, c.reason, c.paused_by, c.paused_at, c.paused_until, ${pausedNow('c', 'clock.now')} AS active
         FROM ${s}.delivery_control c, clock
          FOR UPDATE OF c
     ), req AS (
       SELECT CASE WHEN $3::float8 IS NULL THEN NULL ELSE clock.now + make_interval(secs => $3::float8 / 1000) END AS until
         FROM clock
     ), decision AS (
       SELECT cur.*, req.until AS new_until,
              NOT cur.active
                OR $2::text = $4::text
                OR (cur.paused_by IS DISTINCT FROM $4::text AND cur.paused_until IS NOT NULL
                    AND (req.until IS NULL OR req.until > cur.paused_until)) AS wins
         FROM cur, req
     )
     UPDATE ${s}.delivery_control c SET
       paused = true,
       reason = CASE WHEN d.wins THEN $1 ELSE d.reason END,
       paused_by = CASE WHEN d.wins THEN $2 ELSE d.paused_by END,
       paused_at = CASE WHEN d.active THEN d.paused_at ELSE clock.now END,
       paused_until = CASE WHEN d.wins THEN d.new_until ELSE d.paused_until END,
       updated_at = CASE WHEN d.wins THEN clock.now ELSE c.updated_at END
       FROM decision d, clock
      WHERE c.id = d.id
     RETURNING c.paused, c.reason, c.paused_by, c.paused_at, c.paused_until`,
    [reason, pause.by, pause.untilMs ?? null, PAUSED_BY_OPERATOR, pause.now ?? null],
  );
  return controlFromRow(rows[0]!);
}

/** Lift any pause, an operator's or a provider's: resuming is always an operator's decision. */
export async function deliveryResume(db: Queryable, schema: string, now: Date | null = null): Promise<DeliveryControl> {
  const { rows } = await db.query<ControlRow>(
    `UPDATE ${ident(schema)}.delivery_control SET
       paused = false, reason = NULL, paused_by = NULL, paused_at = NULL, paused_until = NULL,
       updated_at = coalesce($1::timestamptz, now())
     RETURNING paused, reason, paused_by, paused_at, paused_until`,
    [now],
  );
  return controlFromRow(rows[0]!);
}
