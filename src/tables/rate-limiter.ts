import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { LimiterMissingError } from '../errors.js';
import { DEFAULT_ACCOUNT } from '../model/accounts.js';
import { MIN_PER_SECOND, PAUSED_BY_OPERATOR, validatePauseReason, validatePolicy, type RateLimitPolicy } from '../model/delivery-policy.js';
import { pausedNow, pauseStatement, resumeSet } from './pause.js';

/**
 * Every statement on rate_limiter: one row per provider account
 * (model/accounts.ts), named by the account, holding that account's shared
 * token bucket (policy and state), its cooldown after a 429 and its own
 * pause. The bucket is refilled from the database clock and shared by every
 * delivery process on every machine. model/token-bucket.ts is the same
 * formula in TypeScript, for in-process use and tests.
 *
 * Taking permits is one statement that also reads the fleet-wide pause
 * (delivery_control), the account's pause and its cooldown, so the policy,
 * a pause and a 429 reach every worker on its next request. The row lock is held only
 * for that statement; workers take permits in batches, so the row is
 * touched a few hundred times a second even at thousands of sends a second.
 *
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 */

export interface AccountPause {
  paused: boolean;
  reason: string | null;
  /** `operator`, or the provider whose answer paused the account. */
  pausedBy: string | null;
  pausedAt: Date | null;
  pausedUntil: Date | null;
}

export interface RateLimitState extends RateLimitPolicy {
  /** Permits available now (refilled to the database clock). */
  tokens: number;
  cooldownUntil: Date | null;
  /** When the cooldown in force began (null: none in force). */
  cooldownSince: Date | null;
  /** How long the cooldown in force has lasted (ms; 0: none). */
  coolingForMs: number;
  /** Emails granted today (UTC), counted against a daily quota. */
  quotaUsedToday: number;
  /** The account's own pause (the fleet-wide one is delivery_control's). */
  pause: AccountPause;
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
export async function rateLimiterEnsure(db: Queryable, schema: string, initial: RateLimitPolicy, account = DEFAULT_ACCOUNT): Promise<void> {
  const policy = validatePolicy(initial);
  await db.query(
    `INSERT INTO ${ident(schema)}.rate_limiter (name, per_second, burst, tokens)
     VALUES ($1, $2::float8, $3::int, $3::int) ON CONFLICT (name) DO NOTHING`,
    [account, policy.perSecond, policy.burst],
  );
}

/** Emails granted on the UTC day of `at` (row `l`): the day's count, 0 on a new day. */
const quotaUsed = (l: string, at: string): string =>
  `CASE WHEN ${l}.quota_day = (${at} AT TIME ZONE 'UTC')::date THEN ${l}.quota_used ELSE 0 END`;

const STATE_COLUMNS = (now: string): string =>
  `l.name AS account, ${rate('l')} AS per_second, l.burst, l.updated_at, l.cooldown_until,
   CASE WHEN l.cooldown_until > ${now} THEN l.cooldown_since END AS cooldown_since,
   CASE WHEN l.cooldown_until > ${now} THEN (extract(epoch FROM ${now} - coalesce(l.cooldown_since, ${now})) * 1000)::float8 ELSE 0 END
     AS cooling_for_ms,
   ${refilled('l', now)}::float8 AS tokens, ${pausedNow('l', now)} AS account_paused,
   l.reason AS account_reason, l.paused_by AS account_paused_by, l.paused_at AS account_paused_at,
   l.paused_until AS account_paused_until, ${quotaUsed('l', now)} AS quota_used_today`;

/**
 * An account's limiter row refilled to `now` (SQL expression), named by
 * `name` (an SQL parameter holding the account's name): no row until a
 * worker or the API created it. rateLimiterGet reads it alone, the status
 * snapshot (read/stats.ts) beside the others.
 */
export const rateLimiterStateSql = (s: string, name: string, now: string): string =>
  `SELECT ${STATE_COLUMNS(now)} FROM ${s}.rate_limiter l WHERE l.name = ${name}`;

/** The pause columns, as a state row names them (`account_`: beside delivery_control's in the lane snapshot) or a pause statement returns them (``). */
const pauseFromRow = (row: Record<string, unknown>, prefix: 'account_' | ''): AccountPause => ({
  paused: (row[`${prefix}paused`] as boolean | null) ?? false,
  reason: (row[`${prefix}reason`] as string | null) ?? null,
  pausedBy: (row[`${prefix}paused_by`] as string | null) ?? null,
  pausedAt: (row[`${prefix}paused_at`] as Date | null) ?? null,
  pausedUntil: (row[`${prefix}paused_until`] as Date | null) ?? null,
});

/**
 * The accounts among `names` (an SQL text[] expression) at `now`, as one row
 * (`accounts_state`: a JSON array of {account, perSecond, burst, tokens,
 * paused, coolingDown}), for the lane snapshot (read/stats.ts): health is
 * degraded while any is paused, and /metrics has a gauge per account.
 */
export const rateLimiterAccountsSql = (s: string, names: string, now: string): string =>
  `SELECT coalesce(json_agg(json_build_object(
            'account', l.name, 'perSecond', ${rate('l')}, 'burst', l.burst, 'tokens', ${refilled('l', now)},
            'paused', ${pausedNow('l', now)}, 'coolingDown', coalesce(l.cooldown_until > ${now}, false)) ORDER BY l.name), '[]')
            AS accounts_state
     FROM ${s}.rate_limiter l WHERE l.name = ANY (${names})`;

/** One account of rateLimiterAccountsSql's row. */
export interface AccountGaugeState {
  account: string;
  perSecond: number;
  burst: number;
  tokens: number;
  paused: boolean;
  coolingDown: boolean;
}

/** Read back a row of rateLimiterStateSql; undefined where it had none (columns null through an outer join). */
export function rateLimiterStateFromRow(row: Record<string, unknown> | undefined): RateLimitState | undefined {
  if (!row || row['per_second'] === null || row['per_second'] === undefined) return undefined;
  return {
    perSecond: row['per_second'] as number,
    burst: row['burst'] as number,
    tokens: row['tokens'] as number,
    cooldownUntil: row['cooldown_until'] as Date | null,
    cooldownSince: (row['cooldown_since'] as Date | null | undefined) ?? null,
    coolingForMs: Math.max(0, (row['cooling_for_ms'] as number | null | undefined) ?? 0),
    quotaUsedToday: (row['quota_used_today'] as number | null | undefined) ?? 0,
    pause: pauseFromRow(row, 'account_'),
    updatedAt: row['updated_at'] as Date,
  };
}

export async function rateLimiterGet(
  db: Queryable,
  schema: string,
  now: Date | null = null,
  account = DEFAULT_ACCOUNT,
): Promise<RateLimitState | undefined> {
  const { rows } = await db.query(rateLimiterStateSql(ident(schema), '$1', 'coalesce($2::timestamptz, now())'), [account, now]);
  return rateLimiterStateFromRow(rows[0]);
}

/** The rows of the named accounts that exist, by name (one statement: routing reads them every round). */
export async function rateLimiterGetMany(
  db: Queryable,
  schema: string,
  accounts: readonly string[],
  now: Date | null = null,
): Promise<Map<string, RateLimitState>> {
  const { rows } = await db.query(
    `SELECT ${STATE_COLUMNS('coalesce($2::timestamptz, now())')} FROM ${ident(schema)}.rate_limiter l WHERE l.name = ANY ($1::text[])`,
    [accounts, now],
  );
  return new Map(rows.map((row) => [row['account'] as string, rateLimiterStateFromRow(row)!]));
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
  account = DEFAULT_ACCOUNT,
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
    [account, valid.perSecond, valid.burst, now],
  );
  return (await rateLimiterGet(db, schema, now, account))!;
}

export interface PermitGrant {
  granted: number;
  /** Delivery is paused fleet-wide, or this account is. */
  paused: boolean;
  pauseReason: string | null;
  /** This account's own pause is in force (the fleet's may be too). */
  accountPaused: boolean;
  /** A provider rate limit is cooling this account down. */
  coolingDown: boolean;
  /** The account's daily quota is used up for today (UTC): its intents move on until the day turns. */
  quotaSpent: boolean;
  /** Emails the daily quota had left before this take (undefined: no quota): a batch may carry no more. */
  quotaLeft?: number;
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
export async function rateLimiterTake(
  db: Queryable,
  schema: string,
  want: number,
  now: Date | null = null,
  account = DEFAULT_ACCOUNT,
  /** The account's emails per UTC day (model/accounts.ts dailyQuota); undefined: none. */
  dailyQuota?: number,
  /** Emails one permit may carry (a `requests` account sending batches): the daily quota is counted in emails. */
  emailsPerPermit = 1,
): Promise<PermitGrant> {
  const s = ident(schema);
  const { rows } = await db.query<{
    granted: number;
    paused: boolean;
    account_paused: boolean;
    reason: string | null;
    cooling: boolean;
    cooldown_ms: number;
    quota_spent: boolean;
    quota_left: number | null;
    day_left_ms: number;
    left: number;
    per_second: number;
    burst: number;
    bucket_time: string;
  }>(
    `WITH cur AS (
       SELECT l.name, ${rate('l')} AS per_second, l.burst, l.tokens, l.refilled_at, l.cooldown_until,
              l.paused AS a_paused, l.paused_until AS a_paused_until, l.reason AS a_reason,
              ${quotaUsed('l', "coalesce($3::timestamptz, clock_timestamp())")} AS quota_used_today,
              (coalesce($3::timestamptz, clock_timestamp()) AT TIME ZONE 'UTC')::date AS today,
              greatest(l.refilled_at, coalesce($3::timestamptz, clock_timestamp())) AS t,
              coalesce($3::timestamptz, clock_timestamp()) AS wall
         FROM ${s}.rate_limiter l
        WHERE l.name = $1
          FOR UPDATE
     ), bucket AS (
       SELECT cur.*, ${refilled('cur', 'cur.t')} AS avail,
              coalesce(cur.cooldown_until > cur.wall, false) AS cooling,
              ${pausedNow('c', 'cur.wall')} AS fleet_paused, c.reason AS fleet_reason,
              (cur.a_paused AND (cur.a_paused_until IS NULL OR cur.a_paused_until > cur.wall)) AS account_paused
         FROM cur, ${s}.delivery_control c
     ), state AS (
       -- The fleet's pause outranks the account's: its reason is the one reported.
       SELECT bucket.*, fleet_paused OR account_paused AS paused,
              CASE WHEN fleet_paused THEN fleet_reason WHEN account_paused THEN a_reason END AS reason
         FROM bucket
     ), decision AS (
       SELECT bucket.*,
              CASE WHEN paused OR cooling THEN 0
                   ELSE greatest(0, least($2::int, floor(avail)::int,
                                          coalesce(ceil(($4::int - quota_used_today) / $5::float8)::int, $2::int))) END AS granted
         FROM state bucket
     ), upd AS (
       UPDATE ${s}.rate_limiter l
          SET tokens = d.avail - d.granted, refilled_at = d.t,
              quota_day = d.today, quota_used = d.quota_used_today + d.granted * $5::int
         FROM decision d
        WHERE l.name = d.name
        RETURNING l.tokens
     )
     SELECT d.granted, d.paused, d.account_paused, d.reason, d.cooling, d.per_second, d.burst, d.t::text AS bucket_time,
            $4::int IS NOT NULL AND d.quota_used_today + d.granted * $5::int >= $4::int AS quota_spent,
            CASE WHEN $4::int IS NOT NULL THEN greatest(0, $4::int - d.quota_used_today) END AS quota_left,
            (extract(epoch FROM ((d.today + 1)::timestamp AT TIME ZONE 'UTC') - d.wall) * 1000)::float8 AS day_left_ms,
            (extract(epoch FROM d.cooldown_until - d.wall) * 1000)::float8 AS cooldown_ms,
            upd.tokens AS left
       FROM decision d, upd`,
    [account, want, now, dailyQuota ?? null, emailsPerPermit],
  );
  const row = rows[0];
  if (!row) throw new LimiterMissingError(schema, account);
  let retryInMs = 0;
  if (row.paused) retryInMs = 1000;
  else if (row.cooling) retryInMs = Math.max(1, row.cooldown_ms);
  else if (row.quota_spent && row.granted === 0) retryInMs = Math.max(1000, Math.ceil(row.day_left_ms));
  else if (row.granted < want) retryInMs = Math.max(1, Math.ceil(((1 - Math.min(1, row.left)) / row.per_second) * 1000));
  return {
    granted: row.granted,
    paused: row.paused,
    pauseReason: row.reason,
    accountPaused: row.account_paused,
    coolingDown: row.cooling,
    quotaSpent: row.quota_spent,
    ...(row.quota_left !== null ? { quotaLeft: row.quota_left } : {}),
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
const refundSet = (unused: string, unusedEmails = unused): string =>
  `tokens = least(burst::float8, tokens + ${unused}), quota_used = greatest(0, quota_used - ${unusedEmails})`;

/**
 * For the outbox's lease statement (tables/outbox.ts): give back `unused`
 * permits (an SQL integer expression over the lease) of the take at
 * `bucketTime` (an SQL timestamptz expression) in the same statement, so a
 * round that found fewer intents than permits needs no refund of its own.
 * The limiter row is locked only as the statement ends.
 */
export const rateLimiterRefundInLease = (s: string, account: string, unused: string, bucketTime: string): string =>
  `UPDATE ${s}.rate_limiter SET ${refundSet(unused)}
    WHERE name = ${account} AND ${unused} > 0 AND refilled_at = ${bucketTime}`;

/** Give back permits of the take at `bucketTime` that were not used (see above for when that applies). */
export async function rateLimiterRefund(
  db: Queryable,
  schema: string,
  permits: number,
  bucketTime: string,
  account = DEFAULT_ACCOUNT,
  /** Emails of the daily quota to give back (default: one per permit). */
  emails = permits,
): Promise<void> {
  if (permits <= 0 && emails <= 0) return;
  await db.query(
    // Tokens only while the bucket is as the take left it (a refill since has
    // counted the time already); the day's quota count in any case.
    `UPDATE ${ident(schema)}.rate_limiter SET
       tokens = CASE WHEN refilled_at = $3::timestamptz THEN least(burst::float8, tokens + $2::int) ELSE tokens END,
       quota_used = greatest(0, quota_used - $4::int)
     WHERE name = $1`,
    [account, Math.max(0, permits), bucketTime, Math.max(0, emails)],
  );
}

/**
 * A provider said "too fast": nobody in the fleet takes permits on that
 * account until its reset, and its bucket restarts empty so the first
 * sends after the reset are paced, not a burst. A cooldown that extends one
 * in force keeps its start (`cooldown_since`): failover counts from there.
 */
export async function rateLimiterCooldown(
  db: Queryable,
  schema: string,
  retryAfterMs: number,
  now: Date | null = null,
  account = DEFAULT_ACCOUNT,
): Promise<void> {
  await db.query(
    `WITH clock AS (SELECT coalesce($3::timestamptz, clock_timestamp()) AS now)
     UPDATE ${ident(schema)}.rate_limiter SET
       cooldown_since = CASE WHEN cooldown_until > clock.now THEN coalesce(cooldown_since, clock.now) ELSE clock.now END,
       cooldown_until = greatest(coalesce(cooldown_until, clock.now), clock.now + make_interval(secs => $2::float8 / 1000)),
       tokens = 0,
       refilled_at = greatest(refilled_at, clock.now + make_interval(secs => $2::float8 / 1000))
      FROM clock
     WHERE name = $1`,
    [account, retryAfterMs, now],
  );
}

/**
 * Pause one account (every worker stops sending through it on its next
 * take; its intents that may move go to the next account in failover).
 * `by` is `operator` or the provider whose answer paused it; precedence as
 * for the fleet's pause (tables/pause.ts). Undefined: no such account row.
 */
export async function rateLimiterPause(
  db: Queryable,
  schema: string,
  account: string,
  pause: { reason: string; by: string; untilMs?: number; now?: Date | null },
): Promise<AccountPause | undefined> {
  const reason = validatePauseReason(pause.reason);
  const { rows } = await db.query(pauseStatement(`${ident(schema)}.rate_limiter`, 'name', 'c.name = $6'), [
    reason,
    pause.by,
    pause.untilMs ?? null,
    PAUSED_BY_OPERATOR,
    pause.now ?? null,
    account,
  ]);
  return rows[0] ? pauseFromRow(rows[0], '') : undefined;
}

/** Lift the pause of one account, or of every account (`account` null). Returns the accounts resumed. */
export async function rateLimiterResume(db: Queryable, schema: string, account: string | null, now: Date | null = null): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `UPDATE ${ident(schema)}.rate_limiter SET ${resumeSet('coalesce($2::timestamptz, now())')}
      WHERE ($1::text IS NULL OR name = $1) AND paused
     RETURNING name`,
    [account, now],
  );
  return rows.map((r) => r.name);
}
