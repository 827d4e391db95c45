import type { Queryable } from '../db/pool.js';
import { deliveryControlGet, type DeliveryControl } from '../tables/delivery-control.js';
import { rateLimiterGet, type RateLimitState } from '../tables/rate-limiter.js';
import { holdsOldestDueAge } from '../tables/holds.js';
import { intentsOldestPendingAge } from '../tables/outbox.js';
import { intentCountsByState } from '../tables/intent-counts.js';
import { IntentState } from '../model/intent-states.js';

/**
 * The shared-state numbers of both lanes, read from the database so every
 * instance (status command, /healthz, /metrics) reports the same truth. One
 * module, so the three surfaces can never disagree about what "backlog" or
 * "oldest age" means.
 */

export interface ExpiryLaneStats {
  /** Holds still held past their expires_at. */
  dueHolds: number;
  /** Seconds the oldest due hold has waited past its deadline (0 when none). */
  oldestDueAgeSeconds: number;
}

export interface DeliveryLaneStats {
  /** Pending intents (including leased and backed-off ones). */
  backlog: number;
  /** Seconds since the oldest pending intent became available (created); 0 when none. */
  oldestPendingAgeSeconds: number;
  intentsByState: Record<IntentState, number>;
}

export interface LaneStats {
  expiry: ExpiryLaneStats;
  delivery: DeliveryLaneStats;
  control: DeliveryControl;
  /** Undefined until a worker or the API has created the limiter row. */
  limiter: RateLimitState | undefined;
}

/**
 * The delivery lane's numbers: the counts come from email_outbox_counts
 * (kept by triggers, exact, 256 rows to sum), the age from one end of a
 * partial index, so neither grows with history or with the backlog.
 */
export async function outboxStats(db: Queryable, schema: string): Promise<DeliveryLaneStats> {
  const intentsByState = await intentCountsByState(db, schema);
  const oldestPendingAgeSeconds = await intentsOldestPendingAge(db, schema);
  return { backlog: intentsByState.pending, oldestPendingAgeSeconds, intentsByState };
}

/**
 * Everything `status`, health and metrics need. One query after another:
 * `db` may be a single client (an application's), which runs one query at
 * a time anyway.
 */
export async function laneStats(db: Queryable, schema: string): Promise<LaneStats> {
  const due = await holdsOldestDueAge(db, schema, null);
  const delivery = await outboxStats(db, schema);
  const control = await deliveryControlGet(db, schema);
  const limiter = await rateLimiterGet(db, schema);
  return {
    expiry: { dueHolds: due.due, oldestDueAgeSeconds: due.ageSeconds },
    delivery,
    control,
    limiter,
  };
}
