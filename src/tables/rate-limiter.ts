import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { LimiterMissingError } from '../errors.js';
import { MIN_PER_SECOND, validatePolicy, type RateLimitPolicy } from '../model/delivery-policy.js';
import { pausedNow } from './delivery-control.js';

/**
 * Every statement on rate_limiter: the one shared token bucket (policy and
 * state in a row), refilled from the database clock and shared by every
 * delivery process on every machine. model/token-bucket.ts is the same
 * formula in TypeScript, for in-process use and tests.
 *
 * Taking permits is one statement that also reads the fleet-wide pause
 * (delivery_control) and the provider cooldown, so the policy, a pause and
 * a 429 reach every worker on its next request. The row lock is held only
 * for that statement; workers take permits in batches, so the row is
 * touched a few hundred times a second even at thousands of sends a second.
 *
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 */

/** The row's name: one limiter per schema. */
export const LIMITER_NAME = 'email';

export interface RateLimitState extends RateLimitPolicy {
  /** Permits available now (refilled to the database clock). */
  tokens: number;
  cooldownUntil: Date | null;
  updatedAt: Date;
}

/**
 * The refill, written once: row `l`'s tokens at time `at` (SQL
 * expressions). A stored rate under MIN_PER_SECOND (written by hand or by an
 * older version) is held to it, so no read or take can fail with an
 * underflow; reads report that effective rate.
 */
const rate = (l: string): string => `greatest(${l}.per_second, ${MIN_PER_SECOND}::float8)`;
const refilled = (l: string, at: string): string =>
  `least(${l}.burst::float8, ${l}.tokens + ${rate(l)} * greatest(0, extract(epoch FROM ${at} - ${l}.refilled_at)))`;

/** Create the limiter row with the configured initial policy; an existing row (runtime changes) wins. */
export async function rateLimiterEnsure(db: Queryable, schema: string, initial: RateLimitPolicy): Promise<void> {
  const policy = validatePolicy(initial);
  await db.query(
    `INSERT INTO ${ident(schema)}.rate_limiter (name, per_second, burst, tokens)
     VALUES ($1, $2::float8, $3::int, $3::int) ON CONFLICT (name) DO NOTHING`,
    [LIMITER_NAME, policy.perSecond, policy.burst],
  );
}

/**
 * The limiter's row refilled to `now` (SQL expression), named by `name` (an
 * SQL parameter for LIMITER_NAME): no row until a worker or the API created
 * it. rateLimiterGet reads it alone, the status snapshot (read/stats.ts)
 * beside the others.
 */
export const rateLimiterStateSql = (s: string, name: string, now: string): string =>
  `SELECT ${rate('l')} AS per_second, l.burst, l.updated_at, l.cooldown_until, ${refilled('l', now)}::float8 AS tokens
     FROM ${s}.rate_limiter l
    WHERE l.name = ${name}`;

/** Read back a row of rateLimiterStateSql; undefined where it had none (columns null through an outer join). */
export function rateLimiterStateFromRow(row: Record<string, unknown> | undefined): RateLimitState | undefined {
  if (!row || row['per_second'] === null || row['per_second'] === undefined) return undefined;
  return {
    perSecond: row['per_second'] as number,
    burst: row['burst'] as number,
    tokens: row['tokens'] as number,
    cooldownUntil: row['cooldown_until'] as Date | null,
    updatedAt: row['updated_at'] as Date,
  };
}

export async function rateLimiterGet(db: Queryable, schema: string, now: Date | null = null): Promise<RateLimitState | undefined> {
  const { rows } = await db.query(rateLimiterStateSql(ident(schema), '$1', 'coalesce($2::timestamptz, now())'), [LIMITER_NAME, now]);
  return rateLimiterStateFromRow(rows[0]);
}

/**
 * Change the policy at run time. Tokens are refilled under the old rate up
 * to now, then clamped to the new burst, so a change never grants a burst
 * beyond the new policy.
 */
export async function rateLimiterSet(
  db: Queryable,
  schema: string,
  policy: RateLimitPolicy,
  now: Date | null = null,
): Promise<RateLimitState> {
  const valid = validatePolicy(policy);
  await db.query(
    `INSERT INTO ${ident(schema)}.rate_limiter AS l (name, per_second, burst, tokens)
     VALUES ($1, $2::float8, $3::int, $3::int)
     ON CONFLICT (name) DO UPDATE SET
       tokens = least($3::int::float8, ${refilled('l', 'coalesce($4::timestamptz, now())')}),
       refilled_at = coalesce($4::timestamptz, now()),
       per_second = $2::float8,
       burst = $3::int,
       updated_at = coalesce($4::timestamptz, now())`,
    [LIMITER_NAME, valid.perSecond, valid.burst, now],
  );
  return (await rateLimiterGet(db, schema, now))!;
}

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
  /**
   * When the permits were granted: the bucket's time of this take, as
   * stored in `refilled_at` (timestamptz text, to the microsecond). The
   * attempts they pay for start then, and a refund of the unused ones
   * applies only while it is still the bucket's time (rateLimiterRefund).
   */
  bucketTime: string;
}

/**
 * Take up to `want` permits. With the database clock, the time is read
 * after the row lock is granted (clock_timestamp()) and never earlier than
 * the last refill, so waiting on the lock cannot mint permits twice.
 */
export async function rateLimiterTake(db: Queryable, schema: string, want: number, now: Date | null = null): Promise<PermitGrant> {
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
    bucket_time: string;
  }>(
    `WITH cur AS (
       SELECT l.name, ${rate('l')} AS per_second, l.burst, l.tokens, l.refilled_at, l.cooldown_until,
              greatest(l.refilled_at, coalesce($3::timestamptz, clock_timestamp())) AS t,
              coalesce($3::timestamptz, clock_timestamp()) AS wall
         FROM ${s}.rate_limiter l
        WHERE l.name = $1
          FOR UPDATE
     ), bucket AS (
       SELECT cur.*, ${refilled('cur', 'cur.t')} AS avail,
              coalesce(cur.cooldown_until > cur.wall, false) AS cooling,
              ${pausedNow('c', 'cur.wall')} AS paused, c.reason
         FROM cur, ${s}.delivery_control c
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
     SELECT d.granted, d.paused, d.reason, d.cooling, d.per_second, d.burst, d.t::text AS bucket_time,
            (extract(epoch FROM d.cooldown_until - d.wall) * 1000)::float8 AS cooldown_ms,
            upd.tokens AS left
       FROM decision d, upd`,
    [LIMITER_NAME, want, now],
  );
  const row = rows[0];
  if (!row) throw new LimiterMissingError(schema);
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
    bucketTime: row.bucket_time,
  };
}

/**
 * Giving back permits a take did not use is exact only while no other take
 * has moved the bucket since: a take in between refilled it, perhaps to
 * `burst`, and tokens the cap absorbed then cannot be handed out again
 * (a late refund on top of a full bucket would let the fleet exceed
 * burst + perSecond * t). So a refund applies only while the bucket's time
 * is still its take's (`bucketTime`); otherwise the permits are dropped,
 * which can only slow sending, never speed it past the bound.
 */
const refundSet = (unused: string): string => `tokens = least(burst::float8, tokens + ${unused})`;

/**
 * For the outbox's lease statement (tables/outbox.ts): give back `unused`
 * permits (an SQL integer expression over the lease) of the take at
 * `bucketTime` (an SQL timestamptz expression) in the same statement, so a
 * round that found fewer intents than permits needs no refund of its own.
 * The limiter row is locked only as the statement ends.
 */
export const rateLimiterRefundInLease = (s: string, unused: string, bucketTime: string): string =>
  `UPDATE ${s}.rate_limiter SET ${refundSet(unused)}
    WHERE name = '${LIMITER_NAME}' AND ${unused} > 0 AND refilled_at = ${bucketTime}`;

/** Give back permits of the take at `bucketTime` that were not used (see above for when that applies). */
export async function rateLimiterRefund(db: Queryable, schema: string, permits: number, bucketTime: string): Promise<void> {
  if (permits <= 0) return;
  await db.query(
    `UPDATE ${ident(schema)}.rate_limiter SET ${refundSet('$2')} WHERE name = $1 AND refilled_at = $3::timestamptz`,
    [LIMITER_NAME, permits, bucketTime],
  );
}

/**
 * A provider said "too fast": nobody in the fleet takes permits until its
 * reset, and the bucket restarts empty so the first sends after the reset
 * are paced, not a burst.
 */
export async function rateLimiterCooldown(db: Queryable, schema: string, retryAfterMs: number, now: Date | null = null): Promise<void> {
  await db.query(
    `WITH clock AS (SELECT coalesce($3::timestamptz, clock_timestamp()) AS now)
     UPDATE ${ident(schema)}.rate_limiter SET
       cooldown_until = greatest(coalesce(cooldown_until, clock.now), clock.now + make_interval(secs => $2::float8 / 1000)),
       tokens = 0,
       refilled_at = greatest(refilled_at, clock.now + make_interval(secs => $2::float8 / 1000))
      FROM clock
     WHERE name = $1`,
    [LIMITER_NAME, retryAfterMs, now],
  );
}
