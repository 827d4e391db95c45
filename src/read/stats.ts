import { ident, type Queryable } from '../db/pool.js';
import { controlFromRow, deliveryControlSql, type ControlRow, type DeliveryControl } from '../tables/delivery-control.js';
import { DEFAULT_ACCOUNT } from '../model/accounts.js';
import { rateLimiterAccountsSql, rateLimiterStateFromRow, type AccountGaugeState, rateLimiterStateSql, type RateLimitState } from '../tables/rate-limiter.js';
import { holdsDueFromRow, holdsDueSql } from '../tables/holds.js';
import { hookFailuresCountFromRow, hookFailuresCountSql } from '../tables/hook-failures.js';
import { intentsOldestPendingAgeSql, pendingAgeFromRow } from '../tables/outbox.js';
import { intentCountsFromRow, intentCountsSql } from '../tables/intent-counts.js';
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
  /** Held holds waiting on the application's expiry hook, which failed for them (not in dueHolds: the lane is not late for them). */
  hookFailing: number;
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
  /** The first account's limiter (the one /v1/rate-limit acts on); undefined until a worker or the API has created its row. */
  limiter: RateLimitState | undefined;
  /** The accounts in failover, those of them whose own pause is in force, and each one's limiter. */
  accounts: { failover: string[]; paused: string[]; states: AccountGaugeState[] };
}

/**
 * Everything `status`, health and metrics need, in one statement and one
 * round trip: each table's part is the fragment its own module exports (and
 * runs alone in its own reader), side by side in one row. The intent counts
 * come from email_outbox_counts (kept by triggers, exact, 256 rows to sum)
 * and every age from one end of a partial index, so nothing here grows with
 * history or with the backlog. `db` may be a pool or an application's client.
 */
export async function laneStats(db: Queryable, schema: string, failover: readonly string[] = [DEFAULT_ACCOUNT]): Promise<LaneStats> {
  const { rows } = await db.query(laneStatsSql(ident(schema), '$1', '$2::text[]'), [failover[0], failover]);
  return laneStatsFromRow(rows[0] as Record<string, unknown>, failover);
}

/**
 * The lane numbers as one row, for laneStats and for the scrape statement
 * (read/scrape.ts) that reads them beside the reputation and retention
 * numbers; `limiterParam` is the placeholder holding the account whose limiter is shown (the first in failover), `failoverParam` the text[] of the accounts in failover.
 */
export function laneStatsSql(s: string, limiterParam: string, failoverParam: string): string {
  return `SELECT *
            FROM (${holdsDueSql(s, 'now()')}) due,
                 (${hookFailuresCountSql(s)}) hook,
                 (${intentCountsSql(s)}) intents,
                 (${intentsOldestPendingAgeSql(s)}) pending,
                 (${rateLimiterAccountsSql(s, failoverParam, 'now()')}) accounts,
                 (${deliveryControlSql(s, 'now()')}) control
                 LEFT JOIN (${rateLimiterStateSql(s, limiterParam, 'now()')}) limiter ON true`;
}

export function laneStatsFromRow(row: Record<string, unknown>, failover: readonly string[]): LaneStats {
  const due = holdsDueFromRow(row);
  const intentsByState = intentCountsFromRow(row);
  return {
    expiry: { dueHolds: due.due, oldestDueAgeSeconds: due.ageSeconds, hookFailing: hookFailuresCountFromRow(row) },
    delivery: { backlog: intentsByState.pending, oldestPendingAgeSeconds: pendingAgeFromRow(row), intentsByState },
    control: controlFromRow(row as unknown as ControlRow),
    limiter: rateLimiterStateFromRow(row),
    accounts: accountsFromRow(row, failover),
  };
}

function accountsFromRow(row: Record<string, unknown>, failover: readonly string[]): LaneStats['accounts'] {
  const states = (row['accounts_state'] as AccountGaugeState[] | null) ?? [];
  return { failover: [...failover], paused: states.filter((a) => a.paused).map((a) => a.account), states };
}
