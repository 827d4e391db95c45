import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';

/**
 * Every statement on email_accepted_hours: accepted sends per UTC hour, kept
 * exact by the triggers of migrations/0016_accepted_hours.sql in the same
 * transaction as the attempts they count (their only writers), for the
 * last two days.
 *
 * A window of `hours` is whole UTC hours: from the start of the hour
 * `hours - 1` before the current one, to now (between hours - 1 and hours
 * long). The reputation counts of the events module use the same start, so
 * a rate's two sides always cover the same span.
 */
export const windowStartSql = (hoursParam: string): string => `date_trunc('hour', now(), 'UTC') - make_interval(hours => ${hoursParam} - 1)`;

/** Longest window the hours kept can answer (the triggers keep two days). */
export const ACCEPTED_HOURS_KEPT = 47;

/** Sends accepted in the window of `hoursParam` hours, as one row (`accepted`): at most 64 shard rows per hour to sum. */
export const acceptedInWindowSql = (s: string, hoursParam: string): string =>
  `SELECT coalesce(sum(n), 0)::float8 AS accepted FROM ${s}.email_accepted_hours WHERE hour >= ${windowStartSql(hoursParam)}`;

/** Sends accepted in the window of `hours` (at most ACCEPTED_HOURS_KEPT). */
export async function acceptedInWindow(db: Queryable, schema: string, hours: number): Promise<number> {
  if (!Number.isInteger(hours) || hours < 1 || hours > ACCEPTED_HOURS_KEPT) {
    throw new RangeError(`acceptedInWindow: hours must be an integer from 1 to ${ACCEPTED_HOURS_KEPT}, got ${hours}`);
  }
  const { rows } = await db.query<{ accepted: number }>(acceptedInWindowSql(ident(schema), '$1::int'), [hours]);
  return rows[0]?.accepted ?? 0;
}
