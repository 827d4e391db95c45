import { ident, type Queryable } from '../db/pool.js';
import { DEFAULT_ACCOUNT } from '../model/accounts.js';
import { RETENTION_TABLES, type RetentionTables } from '../retention/policy.js';
import { retentionOldestFromRow, retentionOldestSql, type OldestRetained } from '../retention/preview.js';
import { laneStatsFromRow, laneStatsSql, type LaneStats } from './stats.js';
import { webhookBacklogFromRow, webhookBacklogSql, type WebhookBacklog } from '../tables/webhook-events.js';
import { EVENT_WINDOW_HOURS, reputationFromRow, reputationSql, type Reputation } from './event-metrics.js';

/** Everything the database gauges of /metrics show. */
export interface ScrapeReading {
  lanes: LaneStats;
  reputation: Reputation;
  retained: OldestRetained;
  /** The application's webhooks waiting or given up, per endpoint. */
  webhooks: WebhookBacklog[];
}

/**
 * The database part of a scrape in one statement: the lane numbers, the
 * reputation numbers and the oldest kept ages side by side in one row, each
 * the fragment its own reader runs alone. One round trip, because a scrape
 * comes after seconds of quiet, and on a shared machine each statement sent
 * after a pause pays for waking a server process (about a millisecond here),
 * which overlapping three statements on three connections did not hide.
 * Each part is MATERIALIZED so the planner plans the three apart: as one
 * flat join of their dozen relations, planning alone took 4.7 ms where the
 * three parts take 0.7 (PostgreSQL 15, BENCHMARKS.md).
 */
export async function scrapeReading(
  db: Queryable,
  schema: string,
  tables: RetentionTables = RETENTION_TABLES,
  failover: readonly string[] = [DEFAULT_ACCOUNT],
): Promise<ScrapeReading> {
  const s = ident(schema);
  const { rows } = await db.query(
    `WITH lanes AS MATERIALIZED (${laneStatsSql(s, '$1', '$3::text[]')}),
          reputation AS MATERIALIZED (${reputationSql(s, '$2::int')}),
          retained AS MATERIALIZED (${retentionOldestSql(s, tables)}),
          webhooks AS MATERIALIZED (${webhookBacklogSql(s, 'now()')})
     SELECT * FROM lanes, reputation, retained, webhooks`,
    [failover[0], EVENT_WINDOW_HOURS, failover],
  );
  const row = rows[0] as Record<string, unknown>;
  return { lanes: laneStatsFromRow(row, failover), reputation: reputationFromRow(row), retained: retentionOldestFromRow(row, tables), webhooks: webhookBacklogFromRow(row) };
}
