import type { Queryable } from '../db/pool.js';
import { deliveryControlGet, type DeliveryControl } from '../tables/delivery-control.js';
import { rateLimiterGet, type RateLimitState } from '../tables/rate-limiter.js';
import { holdsOldestDueAge } from '../tables/holds.js';
import { intentsCountByState, intentsPendingStats } from '../tables/outbox.js';
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
 * `byState` counts every intent by state, which reads the whole outbox (an
 * index-only scan, but still proportional to history): status and metrics
 * want it; health, which may be polled every few seconds, skips it.
 */
export async function outboxStats(db: Queryable, schema: string, options: { byState?: boolean } = {}): Promise<DeliveryLaneStats> {
  const pending = await intentsPendingStats(db, schema);
  const intentsByState =
    options.byState === false
      ? (Object.fromEntries(Object.values(IntentState).map((state) => [state, 0])) as Record<IntentState, number>)
      : await intentsCountByState(db, schema);
  return { ...pending, intentsByState };
}

/**
 * Everything `status`, health and metrics need. One query after another:
 * `db` may be a single client (an application's), which runs one query at
 * a time anyway.
 */
export async function laneStats(db: Queryable, schema: string, options: { byState?: boolean } = {}): Promise<LaneStats> {
  const due = await holdsOldestDueAge(db, schema, null);
  const delivery = await outboxStats(db, schema, options);
  const control = await deliveryControlGet(db, schema);
  const limiter = await rateLimiterGet(db, schema);
  return {
    expiry: { dueHolds: due.due, oldestDueAgeSeconds: due.ageSeconds },
    delivery,
    control,
    limiter,
  };
}
