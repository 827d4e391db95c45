import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';

/**
 * Every statement on suppression_count: how many addresses are suppressed,
 * kept exact by the triggers of migrations/0013_suppression_count.sql in
 * the same transaction as the suppressions themselves (its only writers).
 * 64 shard rows to sum, whatever the length of the list.
 */
export const suppressionCountSql = (s: string): string => `SELECT coalesce(sum(n), 0)::float8 AS suppressions FROM ${s}.suppression_count`;

export async function suppressionCountGet(db: Queryable, schema: string): Promise<number> {
  const { rows } = await db.query<{ suppressions: number }>(suppressionCountSql(ident(schema)));
  return rows[0]?.suppressions ?? 0;
}
