import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';

/**
 * Every statement on lane_samples (migrations/0027_lane_samples.sql): the
 * last hour of both lanes' numbers, one sample per 10 s in a ring of 360
 * slots, so the dashboard can draw the past hour the moment it opens. A
 * slot is overwritten an hour after it was written: nothing to prune.
 *
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 */

/** Seconds each slot covers. */
export const LANE_SAMPLE_INTERVAL_S = 10;
/** Slots in the ring (the migration's CHECK says the same): one hour at 10 s. */
export const LANE_SAMPLE_SLOTS = 360;
/** The longest past the ring answers. */
export const LANE_SAMPLES_SPAN_S = LANE_SAMPLE_INTERVAL_S * LANE_SAMPLE_SLOTS;

/** One sample: the numbers `leasehold status` shows for both lanes (read/stats.ts LaneStats). */
export interface LaneSample {
  backlog: number;
  dueHolds: number;
  oldestPendingAgeSeconds: number;
  oldestDueAgeSeconds: number;
}

/** A stored sample and when it was read, in Unix seconds. */
export interface LaneSampleAt extends LaneSample {
  t: number;
}

/**
 * Write `sample` into the slot of its 10 s (the one of `now`). A slot
 * already holding a later sample is left alone, so a process with a late
 * reading never overwrites a newer one; the same 10 s sampled by several
 * processes keeps the latest.
 */
export async function laneSamplesRecord(db: Queryable, schema: string, sample: LaneSample, now: Date | null = null): Promise<void> {
  await db.query(
    `INSERT INTO ${ident(schema)}.lane_samples AS l (slot, sampled_at, backlog, due_holds, oldest_pending_age_s, oldest_due_hold_age_s)
     SELECT (floor(extract(epoch FROM c.at) / $6::int)::bigint % $7::int)::int, c.at, $2, $3, $4, $5
       FROM (SELECT coalesce($1::timestamptz, now()) AS at) c
     ON CONFLICT (slot) DO UPDATE
        SET sampled_at = excluded.sampled_at, backlog = excluded.backlog, due_holds = excluded.due_holds,
            oldest_pending_age_s = excluded.oldest_pending_age_s, oldest_due_hold_age_s = excluded.oldest_due_hold_age_s
      WHERE l.sampled_at <= excluded.sampled_at`,
    [
      now,
      sample.backlog,
      sample.dueHolds,
      sample.oldestPendingAgeSeconds,
      sample.oldestDueAgeSeconds,
      LANE_SAMPLE_INTERVAL_S,
      LANE_SAMPLE_SLOTS,
    ],
  );
}

/**
 * The samples of the last `seconds` (at most LANE_SAMPLES_SPAN_S), oldest
 * first, and the database's now (Unix seconds) they are relative to. A
 * slot last written over `seconds` ago (the service was down) is not
 * returned: a gap in the answer is a gap in the sampling.
 */
export async function laneSamplesSince(
  db: Queryable,
  schema: string,
  seconds: number,
  now: Date | null = null,
): Promise<{ now: number; samples: LaneSampleAt[] }> {
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > LANE_SAMPLES_SPAN_S) {
    throw new RangeError(`laneSamplesSince: seconds must be an integer from 1 to ${LANE_SAMPLES_SPAN_S}, got ${seconds}`);
  }
  const { rows } = await db.query<{
    now: number;
    t: number | null;
    backlog: number | null;
    due_holds: number | null;
    oldest_pending_age_s: number | null;
    oldest_due_hold_age_s: number | null;
  }>(
    `WITH c AS (SELECT coalesce($1::timestamptz, now()) AS at)
     SELECT extract(epoch FROM c.at)::float8 AS now, extract(epoch FROM l.sampled_at)::float8 AS t,
            l.backlog, l.due_holds, l.oldest_pending_age_s, l.oldest_due_hold_age_s
       FROM c LEFT JOIN ${ident(schema)}.lane_samples l
         ON l.sampled_at > c.at - make_interval(secs => $2::float8) AND l.sampled_at <= c.at
      ORDER BY l.sampled_at`,
    [now, seconds],
  );
  const samples: LaneSampleAt[] = [];
  for (const row of rows) {
    if (row.t === null) continue;
    samples.push({
      t: row.t,
      backlog: row.backlog!,
      dueHolds: row.due_holds!,
      oldestPendingAgeSeconds: row.oldest_pending_age_s!,
      oldestDueAgeSeconds: row.oldest_due_hold_age_s!,
    });
  }
  return { now: rows[0]!.now, samples };
}
