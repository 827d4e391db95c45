import type { Queryable } from '../../db/pool.js';
import { ident } from '../../db/pool.js';
import { LimiterMissingError } from '../../errors.js';
import { rate, refilled } from './bucket-sql.js';

/**
 * A webhook endpoint's take from its own limiter row (`webhook:<name>`,
 * model/webhook-events.ts webhookLimiterName): the same bucket and refill
 * as a provider account's, without what only email has. Delivery's pause
 * (delivery_control), an account's pause, cooldown and daily quota are
 * not read: pausing email does not stop telling the application.
 * Unused permits go back through rateLimiterRefund with `bucketTime`.
 */
export async function rateLimiterTakeEndpoint(
  db: Queryable,
  schema: string,
  name: string,
  want: number,
  now: Date | null = null,
): Promise<{ granted: number; retryInMs: number; bucketTime: string }> {
  const s = ident(schema);
  const { rows } = await db.query<{ granted: number; left: number; per_second: number; bucket_time: string }>(
    `WITH cur AS (
       SELECT l.name, l.burst, l.tokens, l.refilled_at, ${rate('l')} AS per_second,
              greatest(l.refilled_at, coalesce($3::timestamptz, clock_timestamp())) AS t
         FROM ${s}.rate_limiter l WHERE l.name = $1 FOR UPDATE
     ), decision AS (
       SELECT cur.*, greatest(0, least($2::int, floor(${refilled('cur', 'cur.t')})::int)) AS granted, ${refilled('cur', 'cur.t')} AS avail
         FROM cur
     ), upd AS (
       UPDATE ${s}.rate_limiter l SET tokens = d.avail - d.granted, refilled_at = d.t
         FROM decision d WHERE l.name = d.name
       RETURNING l.tokens
     )
     SELECT d.granted, upd.tokens AS left, d.per_second, d.t::text AS bucket_time FROM decision d, upd`,
    [name, want, now],
  );
  const row = rows[0];
  if (!row) throw new LimiterMissingError(schema, name);
  const retryInMs = row.granted < want ? Math.max(1, Math.ceil(((1 - Math.min(1, row.left)) / row.per_second) * 1000)) : 0;
  return { granted: row.granted, retryInMs, bucketTime: row.bucket_time };
}
