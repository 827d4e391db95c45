import type { Config } from '../config.js';
import { readAll, type Queryable } from '../db/pool.js';
import { judgeHealth, type HealthReport } from './health.js';
import { laneStats, type LaneStats } from './stats.js';
import { attemptsRecentOutcomes } from '../tables/attempts.js';
import { hookFailuresList, type HookFailure } from '../tables/hook-failures.js';

/** Both lanes at a glance: what `leasehold status`, `GET /v1/status` and the dashboard show. */
export interface StatusReport {
  stats: LaneStats;
  sendsLastMinute: Record<string, number>;
  sendsLastHour: Record<string, number>;
  promises: { expiryPromiseS: number; emailPromiseS: number };
  /** The held holds whose expiry hook failed, longest-failing first (at most 20; stats.expiry.hookFailing counts them all). */
  hookFailures: HookFailure[];
  /** Not unavailable (degraded counts as healthy: delivery goes on through the other accounts). */
  healthy: boolean;
  health: HealthReport['status'];
}

export async function readStatus(
  db: Queryable,
  schema: string,
  config: Pick<Config, 'expiryPromiseS' | 'emailPromiseS'>,
  failover?: readonly string[],
): Promise<StatusReport> {
  const [stats, recent, hookFailures] = await readAll(db, [
    () => laneStats(db, schema, failover),
    () => attemptsRecentOutcomes(db, schema),
    () => hookFailuresList(db, schema),
  ] as const);
  const { lastMinute: sendsLastMinute, lastHour: sendsLastHour } = recent;
  const promises = { expiryPromiseS: config.expiryPromiseS, emailPromiseS: config.emailPromiseS };
  const health = judgeHealth(stats, promises).status;
  return { stats, sendsLastMinute, sendsLastHour, promises, hookFailures, healthy: health !== 'unavailable', health };
}
