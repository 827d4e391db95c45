import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';

/**
 * Send attempts per second by outcome, counted at the second each attempt
 * started (the limiter's moment: an attempt opens in the statement that
 * leases it, right after its permit), so a chart of them can be read
 * against the limit. Only finished attempts are counted; one in flight
 * appears once it is recorded, so a poller re-reads the last half minute.
 */
export interface SendRateBin {
  /** Unix second. */
  t: number;
  outcomes: Record<string, number>;
}

export const SEND_RATE_MAX_SECONDS = 3600;

// An attempt finishes at most the send timeout (under the lease) after it
// started; the finished_at index narrows the scan with this much margin.
const FINISH_MARGIN_S = 120;

export async function attemptsPerSecond(db: Queryable, schema: string, seconds: number): Promise<{ now: number; bins: SendRateBin[] }> {
  const { rows } = await db.query<{ now: number; t: number | null; outcome: string | null; n: number | null }>(
    `WITH clock AS (SELECT floor(extract(epoch FROM now()))::float8 AS now),
          recent AS (
            SELECT floor(extract(epoch FROM a.started_at))::float8 AS t, a.outcome, count(*)::int AS n
              FROM ${ident(schema)}.email_attempts a
             WHERE a.finished_at >= now() - make_interval(secs => $1::float8 + $2::float8)
               AND a.started_at >= to_timestamp((SELECT now FROM clock) - $1::float8)
             GROUP BY 1, 2
          )
     SELECT clock.now, recent.t, recent.outcome, recent.n FROM clock LEFT JOIN recent ON true ORDER BY recent.t, recent.outcome`,
    [seconds, FINISH_MARGIN_S],
  );
  const bins = new Map<number, SendRateBin>();
  for (const row of rows) {
    if (row.t === null || row.n === null) continue;
    const bin = bins.get(row.t) ?? { t: row.t, outcomes: {} };
    bin.outcomes[row.outcome ?? 'unknown'] = row.n;
    bins.set(row.t, bin);
  }
  return { now: rows[0]?.now ?? Math.floor(Date.now() / 1000), bins: [...bins.values()] };
}
