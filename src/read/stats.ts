import { readAll, type Queryable } from '../db/pool.js';
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
 * Everything `status`, health and metrics need: five small reads, side by
 * side on a pool, one after another on a single client (an application's).
 * The intent counts come from email_outbox_counts (kept by triggers, exact,
 * 256 rows to sum) and every age from one end of a partial index, so none
 * grows with history or with the backlog.
 */
export async function laneStats(db: Queryable, schema: string): Promise<LaneStats> {
  const [due, intentsByState, oldestPendingAgeSeconds, control, limiter] = await readAll(db, [
    () => holdsOldestDueAge(db, schema, null),
    () => intentCountsByState(db, schema),
    () => intentsOldestPendingAge(db, schema),
    () => deliveryControlGet(db, schema),
    () => rateLimiterGet(db, schema),
  ] as const);
  return {
    expiry: { dueHolds: due.due, oldestDueAgeSeconds: due.ageSeconds },
    delivery: { backlog: intentsByState.pending, oldestPendingAgeSeconds, intentsByState },
    control,
    limiter,
  };
}
