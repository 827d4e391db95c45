import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
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
 */
export async function intentCountsByState(db: Queryable, schema: string): Promise<Record<IntentState, number>> {
  const { rows } = await db.query<{ state: IntentState; n: number }>(
    `SELECT state, sum(n)::float8 AS n FROM ${ident(schema)}.email_outbox_counts GROUP BY state`,
  );
  const counts = Object.fromEntries(Object.values(IntentState).map((state) => [state, 0])) as Record<IntentState, number>;
  for (const row of rows) counts[row.state] = row.n;
  return counts;
}
