import { MIN_PER_SECOND } from '../../model/delivery-policy.js';

/**
 * The bucket's arithmetic in SQL, shared by the state reads (state.ts) and
 * the take (permits.ts); model/token-bucket.ts is the same in TypeScript.
 */

/**
 * The refill, written once: row `l`'s tokens at time `at` (SQL
 * expressions). A stored rate under MIN_PER_SECOND (written by hand or by an
 * older version) is held to it, so no read or take can fail with an
 * underflow; reads report that effective rate.
 */
export const rate = (l: string): string => `greatest(${l}.per_second, ${MIN_PER_SECOND}::float8)`;
export const refilled = (l: string, at: string): string =>
  `least(${l}.burst::float8, ${l}.tokens + ${rate(l)} * greatest(0, extract(epoch FROM ${at} - ${l}.refilled_at)))`;

/** Emails granted on the UTC day of `at` (row `l`): the day's count, 0 on a new day. */
export const quotaUsed = (l: string, at: string): string =>
  `CASE WHEN ${l}.quota_day = (${at} AT TIME ZONE 'UTC')::date THEN ${l}.quota_used ELSE 0 END`;
