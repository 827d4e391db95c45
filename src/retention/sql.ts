import type { ColumnErasure } from './policy.js';
import { ident } from '../db/pool.js';
import { ERASED, ERASED_ON_REQUEST } from './policy.js';

/**
 * SQL fragments every retention statement shares: a hold's end, the cutoff,
 * the clock, and what erasure writes into each kind of column. Parameters:
 * $1 now (null: the database clock), $2 days.
 */

/** Rows changed per table by one statement. */
export type TableCounts = Record<string, number>;

/** A hold's end; both partial indexes of migration 0009 are built on exactly this expression. */
export const HOLD_END = 'coalesce(r.confirmed_at, r.cancelled_at, r.expired_at)';
export const CUTOFF = '(coalesce($1::timestamptz, now()) - make_interval(days => $2::int))';
export const NOW = 'coalesce($1::timestamptz, now())';

/** The new value of a column under erasure (`p` is the address-pattern parameter). */
export function erasedValue(alias: string, column: string, how: ColumnErasure, p: string): string {
  const c = `${alias}.${ident(column)}`;
  switch (how) {
    case 'null':
      return 'NULL';
    case 'scrub-text':
      return `regexp_replace(${c}, ${p}, '${ERASED}', 'g')`;
    case 'scrub-json':
      return `regexp_replace(${c}::text, ${p}, '${ERASED}', 'g')::jsonb`;
    case 'marker':
      return `'erased'`;
  }
}

/** True for a row erasure would still change (so counts report real changes). */
export function stillPersonal(alias: string, erase: Record<string, ColumnErasure>, p: string): string {
  const parts = Object.entries(erase).map(([column, how]) => {
    const c = `${alias}.${ident(column)}`;
    if (how === 'null') return `${c} IS NOT NULL`;
    if (how === 'marker') return `${c} IS DISTINCT FROM 'erased'`;
    return `${c}${how === 'scrub-json' ? '::text' : ''} ~ ${p}`;
  });
  return `(${parts.join(' OR ')})`;
}

export function setClause(erase: Record<string, ColumnErasure>, alias: string, p: string): string {
  return Object.entries(erase)
    .map(([column, how]) => `${ident(column)} = ${erasedValue(alias, column, how, p)}`)
    .join(', ');
}

/** The personal data of a hold, as erasure leaves it. */
export const HOLD_ERASURE = (p: string) =>
  `customer_email = NULL, erased_at = ${NOW}, request_hash = 'erased',
   metadata = regexp_replace(r.metadata::text, ${p}, '${ERASED}', 'g')::jsonb`;

/**
 * The statement parts erasure on request shares (address-erasure.ts,
 * tenant-erasure.ts), over CTEs `pending` (id) and `intents` (id):
 * - `erasureCloseAttemptsSql`: an attempt a worker opened and has not
 *   recorded may be in flight; it is closed as abandoned (an acceptance
 *   that comes anyway is still recorded: a fact);
 * - `erasureIntentsSql`: the intents lose their address; a pending one is
 *   rejected, never sent; `p` is the address-in-text pattern's parameter.
 */
export const erasureCloseAttemptsSql = (s: string): string =>
  `UPDATE ${s}.email_attempts a SET outcome = 'abandoned', outcome_unknown = true, finished_at = ${NOW},
              error = '${ERASED_ON_REQUEST} before a result was recorded'
        WHERE a.intent_id = ANY (ARRAY(SELECT id FROM pending)) AND a.finished_at IS NULL
        RETURNING 1`;

export const erasureIntentsSql = (s: string, p: string): string =>
  `UPDATE ${s}.email_outbox o SET
              recipient = NULL,
              state = CASE WHEN o.state = 'pending' THEN 'rejected' ELSE o.state END,
              finished_at = CASE WHEN o.state = 'pending' THEN ${NOW} ELSE o.finished_at END,
              last_error = CASE WHEN o.state = 'pending' THEN '${ERASED_ON_REQUEST}'
                                ELSE regexp_replace(o.last_error, ${p}, '${ERASED}', 'g') END,
              lease_token = NULL, lease_expires_at = NULL
        WHERE o.id = ANY (ARRAY(SELECT id FROM intents))
        RETURNING 1`;
