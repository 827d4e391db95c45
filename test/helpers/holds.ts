import type pg from 'pg';
import { ident } from '../../src/db/pool.js';

/**
 * Insert `count` holds directly, already due `pastSeconds` ago. Tests use it
 * to make due holds without waiting: the row is backdated instead.
 */
export async function insertDueHolds(
  pool: pg.Pool,
  schema: string,
  count: number,
  options: { prefix?: string; pastSeconds?: number } = {},
): Promise<string[]> {
  const prefix = options.prefix ?? 'h';
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  await pool.query(
    `INSERT INTO ${ident(schema)}.support_reservations (id, customer_email, expires_at, created_at, request_hash)
     SELECT id, 'customer+' || id || '@example.com', now() - make_interval(secs => $2), now() - interval '1 hour', 'seeded'
       FROM unnest($1::text[]) AS id`,
    [ids, options.pastSeconds ?? 1],
  );
  return ids;
}

export async function countBy(pool: pg.Pool, schema: string, table: string, column: string): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ k: string; n: number }>(
    `SELECT ${column} AS k, count(*)::int AS n FROM ${ident(schema)}.${table} GROUP BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.k, r.n]));
}
