import type { Queryable } from '../../db/pool.js';
import { ident } from '../../db/pool.js';
import { LimiterMissingError } from '../../errors.js';
import { DEFAULT_ACCOUNT } from '../../model/accounts.js';
import { pausedNow } from '../pause.js';
import { quotaUsed, rate, refilled } from './bucket-sql.js';

/**
 * The delivery lane's statements on rate_limiter: taking permits (which
 * reads every pause and the cooldown in the same statement), giving back
 * the unused ones, and the cooldown after a provider's 429.
 */

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

/** Where a take's inputs come from: SQL expressions (parameters, usually) for the account, the permits wanted, the time (null: the database's clock), the daily quota (null: none) and the emails a permit carries. */
export interface TakeInputs {
  account: string;
  want: string;
  now: string;
  dailyQuota: string;
  emailsPerPermit: string;
}

/**
 * A take's decision as CTEs (`cur`, `bucket`, `state`, `decision`), for
 * rateLimiterTake and for a lease statement that takes its own permits
 * (tables/outbox/lease.ts): `decision` is one row, the account's limiter row
 * locked (FOR UPDATE), with `granted` and the bucket's state; nothing is
 * written. The statement that uses it must write the row once (tokens =
 * avail - what it spends, refilled_at = t, the quota count).
 */
export const rateLimiterTakeDecisionSql = (s: string, p: TakeInputs): string => {
  const now = `coalesce(${p.now}::timestamptz, clock_timestamp())`;
  return `cur AS (
       SELECT l.name, ${rate('l')} AS per_second, l.burst, l.tokens, l.refilled_at, l.cooldown_until,
              l.paused AS a_paused, l.paused_until AS a_paused_until, l.reason AS a_reason,
              ${quotaUsed('l', now)} AS quota_used_today,
              (${now} AT TIME ZONE 'UTC')::date AS today,
              greatest(l.refilled_at, ${now}) AS t,
              ${now} AS wall
         FROM ${s}.rate_limiter l
        WHERE l.name = ${p.account}
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
                   ELSE greatest(0, least(${p.want}::int, floor(avail)::int,
                                          coalesce(ceil((${p.dailyQuota}::int - quota_used_today) / ${p.emailsPerPermit}::float8)::int, ${p.want}::int))) END AS granted
         FROM state bucket
     )`;
};

/**
 * The one write of a take, after rateLimiterTakeDecisionSql: the account's
 * row refilled to the decision's time with `permits` spent (an SQL integer
 * expression; `d` is the decision) and `emails` counted against the day's
 * quota. rateLimiterTake spends what it granted; a lease that took its own
 * permits (tables/outbox/lease.ts) spends what it leased. Answers the tokens
 * left (`tokens`). `when`, an SQL boolean read before the decision, writes
 * only if it holds (the decision, and its lock, are then not read at all).
 */
export const rateLimiterSpendSql = (s: string, permits: string, emails = permits, when?: string): string =>
  `UPDATE ${s}.rate_limiter l
      SET tokens = d.avail - (${permits}), refilled_at = d.t,
          quota_day = d.today, quota_used = d.quota_used_today + (${emails})
     FROM decision d
    WHERE l.name = d.name${when ? ` AND ${when}` : ''}
    RETURNING l.tokens`;

/**
 * What a take tells, as columns of the decision `d` after a write that
 * left `left` tokens (an SQL expression), prefixed with `prefix`; read back
 * with permitGrantFromRow.
 */
export const permitGrantColumnsSql = (d: string, left: string, p: Pick<TakeInputs, 'dailyQuota' | 'emailsPerPermit'>, prefix = ''): string =>
  `${d}.granted AS ${prefix}granted, ${d}.paused AS ${prefix}paused, ${d}.account_paused AS ${prefix}account_paused, ${d}.reason AS ${prefix}reason,
   ${d}.cooling AS ${prefix}cooling, ${d}.per_second AS ${prefix}per_second, ${d}.burst AS ${prefix}burst, ${d}.t::text AS ${prefix}bucket_time,
   ${p.dailyQuota}::int IS NOT NULL AND ${d}.quota_used_today + ${d}.granted * ${p.emailsPerPermit}::int >= ${p.dailyQuota}::int AS ${prefix}quota_spent,
   CASE WHEN ${p.dailyQuota}::int IS NOT NULL THEN greatest(0, ${p.dailyQuota}::int - ${d}.quota_used_today) END AS ${prefix}quota_left,
   (extract(epoch FROM ((${d}.today + 1)::timestamp AT TIME ZONE 'UTC') - ${d}.wall) * 1000)::float8 AS ${prefix}day_left_ms,
   (extract(epoch FROM ${d}.cooldown_until - ${d}.wall) * 1000)::float8 AS ${prefix}cooldown_ms,
   (${left})::float8 AS ${prefix}left`;

/** The grant of a take of `want` permits, from the columns permitGrantColumnsSql named. */
export function permitGrantFromRow(row: Record<string, unknown>, want: number, prefix = ''): PermitGrant {
  const col = <T>(name: string) => row[prefix + name] as T;
  const granted = col<number>('granted');
  const paused = col<boolean>('paused');
  const cooling = col<boolean>('cooling');
  const quotaSpent = col<boolean>('quota_spent');
  const quotaLeft = col<number | null>('quota_left');
  const perSecond = col<number>('per_second');
  let retryInMs = 0;
  if (paused) retryInMs = 1000;
  else if (cooling) retryInMs = Math.max(1, col<number>('cooldown_ms'));
  else if (quotaSpent && granted === 0) retryInMs = Math.max(1000, Math.ceil(col<number>('day_left_ms')));
  else if (granted < want) retryInMs = Math.max(1, Math.ceil(((1 - Math.min(1, col<number>('left'))) / perSecond) * 1000));
  return {
    granted,
    paused,
    pauseReason: col<string | null>('reason'),
    accountPaused: col<boolean>('account_paused'),
    coolingDown: cooling,
    quotaSpent,
    ...(quotaLeft !== null ? { quotaLeft } : {}),
    retryInMs,
    perSecond,
    burst: col<number>('burst'),
    bucketTime: col<string>('bucket_time'),
  };
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
  const inputs: TakeInputs = { account: '$1', want: '$2', now: '$3', dailyQuota: '$4', emailsPerPermit: '$5' };
  const { rows } = await db.query<Record<string, unknown>>(
    `WITH ${rateLimiterTakeDecisionSql(s, inputs)}, upd AS (
       ${rateLimiterSpendSql(s, 'd.granted', 'd.granted * $5::int')}
     )
     SELECT ${permitGrantColumnsSql('d', 'upd.tokens', inputs)}
       FROM decision d, upd`,
    [account, want, now, dailyQuota ?? null, emailsPerPermit],
  );
  const row = rows[0];
  if (!row) throw new LimiterMissingError(schema, account);
  return permitGrantFromRow(row, want);
}

/**
 * Giving back permits a take did not use is exact only while no other take
 * has moved the bucket since: a take in between refilled it, perhaps to
 * `burst`, and tokens the cap absorbed then cannot be handed out again
 * (a late refund on top of a full bucket would let the fleet exceed
 * burst + perSecond * t). So the tokens come back only while the bucket's
 * time is still its take's (`bucketTime`); otherwise they are dropped,
 * which can only slow sending, never speed it past the bound.
 *
 * The day's quota count is given back in any case: it counts emails that
 * may have gone out, and these did not. (Dropping it with the tokens made
 * every idle round that raced another add its permits to quotaUsedToday:
 * 10 or so on each sandbox start with nothing sent.)
 */
const refundSet = (unused: string, bucketTime: string, unusedEmails = unused): string =>
  `tokens = CASE WHEN refilled_at = ${bucketTime} THEN least(burst::float8, tokens + ${unused}) ELSE tokens END,
   quota_used = greatest(0, quota_used - ${unusedEmails})`;

/**
 * For the outbox's lease statement (tables/outbox.ts): give back `unused`
 * permits (an SQL integer expression over the lease) of the take at
 * `bucketTime` (an SQL timestamptz expression) in the same statement, so a
 * round that found fewer intents than permits needs no refund of its own.
 * The limiter row is locked only as the statement ends.
 */
export const rateLimiterRefundInLease = (s: string, account: string, unused: string, bucketTime: string): string =>
  `UPDATE ${s}.rate_limiter SET ${refundSet(unused, bucketTime)}
    WHERE name = ${account} AND ${unused} > 0`;

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
    `UPDATE ${ident(schema)}.rate_limiter SET ${refundSet('$2::int', '$3::timestamptz', '$4::int')}
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
