import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { PAUSED_BY_OPERATOR, validatePauseReason } from '../model/delivery-policy.js';
import { pausedNow, pauseStatement, resumeSet } from './pause.js';

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

export { pausedNow } from './pause.js';

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
 * Pause delivery fleet-wide. `by` says who (`operator`, or what paused it:
 * `templates`); `untilMs` makes the pause lift itself. The precedence
 * between an operator's pause and any other is tables/pause.ts's.
 */
export async function deliveryPause(
  db: Queryable,
  schema: string,
  pause: { reason: string; by: string; untilMs?: number; now?: Date | null },
): Promise<DeliveryControl> {
  const reason = validatePauseReason(pause.reason);
  const { rows } = await db.query<ControlRow>(pauseStatement(`${ident(schema)}.delivery_control`, 'id', 'true'), [
    reason,
    pause.by,
    pause.untilMs ?? null,
    PAUSED_BY_OPERATOR,
    pause.now ?? null,
  ]);
  return controlFromRow(rows[0]!);
}

/** Lift any pause, an operator's or a provider's: resuming is always an operator's decision. */
export async function deliveryResume(db: Queryable, schema: string, now: Date | null = null): Promise<DeliveryControl> {
  const { rows } = await db.query<ControlRow>(
    `UPDATE ${ident(schema)}.delivery_control SET ${resumeSet('coalesce($1::timestamptz, now())')}
     RETURNING paused, reason, paused_by, paused_at, paused_until`,
    [now],
  );
  return controlFromRow(rows[0]!);
}
