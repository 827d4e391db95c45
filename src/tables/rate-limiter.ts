import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { LIMITER_NAME, MIN_PER_SECOND } from './delivery-control.js';

/**
 * The one shared rate limiter: a token bucket row in PostgreSQL, refilled
 * from the database clock (the bucket formula of bucket.ts, in SQL), shared
 * by every delivery process on every machine. Taking permits is one
 * statement that also reads the fleet-wide pause and the provider cooldown,
 * so the policy, a pause and a 429 reach every worker on its next request.
 *
 * The row lock is held only for that one statement; workers take permits in
 * batches, so the row is touched a few hundred times a second even at
 * thousands of sends per second.
 */
export interface PermitGrant {
  granted: number;
  /** Delivery is paused fleet-wide (operator or provider). */
  paused: boolean;
  pauseReason: string | null;
  /** A provider rate limit is cooling the whole fleet down. */
  coolingDown: boolean;
  /** How long until asking again could succeed (ms). */
  retryInMs: number;
  perSecond: number;
  burst: number;
}

export async function limiterTake(db: Queryable, schema: string, want: number): Promise<PermitGrant> {
  const s = ident(schema);
  const { rows } = await db.query<{
    granted: number;
    paused: boolean;
    reason: string | null;
    cooling: boolean;
    cooldown_ms: number;
    left: number;
    per_second: number;
    burst: number;
  }>(
    `WITH ctl AS (
       SELECT (paused AND (paused_until IS NULL OR paused_until > now())) AS paused, reason
         FROM ${s}.delivery_control
     ), cur AS (
       -- Evaluated after the row lock is granted; never earlier than the
       -- last refill, so waiting on the lock cannot mint permits twice.
       -- A stored rate under the minimum is held to it (see rateLimiterGet).
       SELECT l.name, greatest(l.per_second, $3::float8) AS per_second, l.burst, l.tokens, l.refilled_at, l.cooldown_until,
              greatest(l.refilled_at, clock_timestamp()) AS t, clock_timestamp() AS wall
         FROM ${s}.rate_limiter l
        WHERE l.name = $1
          FOR UPDATE
     ), bucket AS (
       SELECT cur.*,
              least(cur.burst::float8, cur.tokens + cur.per_second * extract(epoch FROM cur.t - cur.refilled_at)) AS avail,
              coalesce(cur.cooldown_until > cur.wall, false) AS cooling,
              ctl.paused, ctl.reason
         FROM cur, ctl
     ), decision AS (
       SELECT bucket.*,
              CASE WHEN paused OR cooling THEN 0 ELSE least($2::int, floor(avail)::int) END AS granted
         FROM bucket
     ), upd AS (
       UPDATE ${s}.rate_limiter l
          SET tokens = d.avail - d.granted, refilled_at = d.t
         FROM decision d
        WHERE l.name = d.name
        RETURNING l.tokens
     )
     SELECT d.granted, d.paused, d.reason, d.cooling, d.per_second, d.burst,
            (extract(epoch FROM d.cooldown_until - d.wall) * 1000)::float8 AS cooldown_ms,
            upd.tokens AS left
       FROM decision d, upd`,
    [LIMITER_NAME, want, MIN_PER_SECOND],
  );
  const row = rows[0];
  if (!row) throw new Error(`rate limiter row "${LIMITER_NAME}" is missing in schema ${schema}; run rateLimiterEnsure first`);
  let retryInMs = 0;
  if (row.paused) retryInMs = 1000;
  else if (row.cooling) retryInMs = Math.max(1, row.cooldown_ms);
  else if (row.granted < want) retryInMs = Math.max(1, Math.ceil(((1 - Math.min(1, row.left)) / row.per_second) * 1000));
  return {
    granted: row.granted,
    paused: row.paused,
    pauseReason: row.reason,
    coolingDown: row.cooling,
    retryInMs,
    perSecond: row.per_second,
    burst: row.burst,
  };
}

/** Give back permits taken but not used (fewer intents were due than permits). */
export async function limiterRefund(db: Queryable, schema: string, permits: number): Promise<void> {
  if (permits <= 0) return;
  await db.query(
    `UPDATE ${ident(schema)}.rate_limiter SET tokens = least(burst::float8, tokens + $2) WHERE name = $1`,
    [LIMITER_NAME, permits],
  );
}

/**
 * A provider said "too fast": nobody in the fleet takes permits until its
 * reset, and the bucket restarts empty so the first sends after the reset
 * are paced, not a burst.
 */
export async function limiterCooldown(db: Queryable, schema: string, retryAfterMs: number): Promise<void> {
  await db.query(
    `UPDATE ${ident(schema)}.rate_limiter SET
       cooldown_until = greatest(coalesce(cooldown_until, now()), clock_timestamp() + make_interval(secs => $2::float8 / 1000)),
       tokens = 0,
       refilled_at = greatest(refilled_at, clock_timestamp() + make_interval(secs => $2::float8 / 1000))
     WHERE name = $1`,
    [LIMITER_NAME, retryAfterMs],
  );
}
