import type { Queryable } from '../../db/pool.js';
import { ident } from '../../db/pool.js';
import { attemptsCloseExpired } from '../attempts.js';

/**
 * email_outbox, the deadline sweep (migration 0024): the delivery lane's
 * statement that ends intents whose deadline (send_by) passed unsent. The
 * lease (./fair.ts) never takes one; this gives it its terminal state.
 */

export interface SweptIntent {
  id: string;
  holdId: string;
  template: string;
  tenant: string;
  /** voided (a reminder whose hold was confirmed or cancelled) or missed_deadline. */
  state: 'voided' | 'missed_deadline';
}

/**
 * End up to `limit` pending intents whose deadline (send_by) has passed and
 * that no live lease holds (nor an open batch, whose members go out
 * together or not at all): never sent. A reminder whose hold was confirmed
 * or cancelled meanwhile (it was in flight then, and came back unsent) is
 * voided; every other one missed its deadline. Oldest deadline first,
 * through email_outbox_deadline (migration 0024), skipping rows other
 * statements hold.
 */
export async function intentsSweepDeadlines(db: Queryable, schema: string, now: Date | null, limit: number): Promise<SweptIntent[]> {
  const s = ident(schema);
  const { rows } = await db.query<{ id: string; reservation_id: string; template: string; tenant: string; state: SweptIntent['state'] }>(
    `WITH clock AS (
       SELECT coalesce($1::timestamptz, now()) AS now
     ), past AS (
       -- The clock as a scalar subquery, not joined, so that the bound
       -- starts and stops the deadline index's scan (joined, it was a join
       -- filter, and every sweep read all the deadlines still ahead).
       SELECT o.id FROM ${s}.email_outbox o
        WHERE o.state = 'pending' AND o.send_by IS NOT NULL AND o.send_by <= (SELECT clock.now FROM clock) AND o.batch_id IS NULL
          AND (o.lease_token IS NULL OR o.lease_expires_at <= (SELECT clock.now FROM clock))
        ORDER BY o.send_by
        LIMIT $2
          FOR UPDATE OF o SKIP LOCKED
     ), swept AS (
       UPDATE ${s}.email_outbox o
        SET state = CASE WHEN o.template = 'reservation-reminder' AND r.status IN ('confirmed', 'cancelled') THEN 'voided' ELSE 'missed_deadline' END,
            finished_at = clock.now,
            last_error = CASE WHEN o.template = 'reservation-reminder' AND r.status IN ('confirmed', 'cancelled')
                              THEN 'its hold was ' || r.status || ' first'
                              ELSE 'not sent by its deadline ' || to_char(o.send_by AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END,
            lease_token = NULL, lease_expires_at = NULL
       FROM clock, ${s}.support_reservations r
      -- By key, the ids as one array: joined with past (estimated at its
      -- LIMIT), a table of a few thousand rows was hashed whole each sweep.
      WHERE o.id = ANY (ARRAY(SELECT past.id FROM past)) AND r.id = o.reservation_id
      RETURNING o.id, o.reservation_id, o.template, o.tenant, o.state
     ), closed AS (
       -- A dead worker's lease: its attempt never reported back.
       ${attemptsCloseExpired(s, 'ARRAY(SELECT id FROM swept)', '(SELECT now FROM clock)')}
     )
     SELECT * FROM swept`,
    [now, limit],
  );
  return rows.map((r) => ({ id: r.id, holdId: r.reservation_id, template: r.template, tenant: r.tenant, state: r.state }));
}
