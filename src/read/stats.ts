import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { deliveryControlGet, rateLimiterGet, type DeliveryControl, type RateLimitState } from '../tables/delivery-control.js';
import { holdsOldestDueAge } from '../tables/holds.js';
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
  const s = ident(schema);
  // Pending numbers come through the partial index on created_at; the
  // per-state counts use the (state, created_at, id) index.
  const [pending, states] = await Promise.all([
    db.query<{ backlog: number; age: number | null }>(
      `SELECT count(*)::int AS backlog, extract(epoch FROM now() - min(created_at))::float8 AS age
         FROM ${s}.email_outbox WHERE state = 'pending'`,
    ),
    options.byState === false
      ? { rows: [] as Array<{ state: IntentState; n: number }> }
      : db.query<{ state: IntentState; n: number }>(`SELECT state, count(*)::int AS n FROM ${s}.email_outbox GROUP BY state`),
  ]);
  const intentsByState = Object.fromEntries(Object.values(IntentState).map((state) => [state, 0])) as Record<IntentState, number>;
  for (const row of states.rows) intentsByState[row.state] = row.n;
  const row = pending.rows[0];
  return {
    backlog: row?.backlog ?? 0,
    oldestPendingAgeSeconds: Math.max(0, row?.age ?? 0),
    intentsByState,
  };
}

/** Everything `status`, health and metrics need, in one round of queries. */
export async function laneStats(db: Queryable, schema: string, options: { byState?: boolean } = {}): Promise<LaneStats> {
  const [due, delivery, control, limiter] = await Promise.all([
    holdsOldestDueAge(db, schema, null),
    outboxStats(db, schema, options),
    deliveryControlGet(db, schema),
    rateLimiterGet(db, schema),
  ]);
  return {
    expiry: { dueHolds: due.due, oldestDueAgeSeconds: due.ageSeconds },
    delivery,
    control,
    limiter,
  };
}

/**
 * Finished send attempts by outcome over the last minute and the last hour,
 * in one pass over the recent attempts (email_attempts_finished index).
 */
export async function recentAttemptOutcomes(
  db: Queryable,
  schema: string,
): Promise<{ lastMinute: Record<string, number>; lastHour: Record<string, number> }> {
  const { rows } = await db.query<{ outcome: string; minute: number; hour: number }>(
    `SELECT outcome,
            (count(*) FILTER (WHERE finished_at >= now() - interval '1 minute'))::int AS minute,
            count(*)::int AS hour
       FROM ${ident(schema)}.email_attempts
      WHERE finished_at >= now() - interval '1 hour'
      GROUP BY outcome ORDER BY outcome`,
  );
  return {
    lastMinute: Object.fromEntries(rows.filter((r) => r.minute > 0).map((r) => [r.outcome, r.minute])),
    lastHour: Object.fromEntries(rows.map((r) => [r.outcome, r.hour])),
  };
}

export interface PromiseCheck {
  ageSeconds: number;
  promiseSeconds: number;
  kept: boolean;
}

export function checkPromise(ageSeconds: number, promiseSeconds: number): PromiseCheck {
  return { ageSeconds, promiseSeconds, kept: ageSeconds <= promiseSeconds };
}
