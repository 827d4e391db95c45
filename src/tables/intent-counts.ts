import { IntentState } from '../model/intent-states.js';

/**
 * Every statement on email_outbox_counts: intents by state, kept exact by
 * the statement-level triggers of migrations/0012_intent_counts.sql in the
 * same transaction as the outbox rows they count. Nothing here writes it:
 * the triggers are its only writers, so no code path that changes an
 * intent's state (lease, record, expire, replay, prune, erase, an
 * operator's own SQL) can forget to count.
 *
 * Each state is split over shards (one per backend, modulo 64) so
 * concurrent delivery workers do not wait on one row lock; a reader sums
 * them. 256 rows whatever the history: the cost of this read does not grow.
 * One row, a column per state, which the lane snapshot (read/stats.ts)
 * reads beside the other lane numbers.
 */
export const intentCountsSql = (s: string): string =>
  `SELECT ${Object.values(IntentState)
    .map((state) => `coalesce(sum(n) FILTER (WHERE state = '${state}'), 0)::float8 AS intents_${state}`)
    .join(', ')}
     FROM ${s}.email_outbox_counts`;

/** Read back the row of intentCountsSql (one column per state, `intents_<state>`). */
export const intentCountsFromRow = (row: Record<string, unknown>): Record<IntentState, number> =>
  Object.fromEntries(Object.values(IntentState).map((state) => [state, (row[`intents_${state}`] as number | undefined) ?? 0])) as Record<
    IntentState,
    number
  >;
