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

/**
 * History for plan tests: `count` holds expired two days ago (`old-1` ...),
 * each with a sent intent (`reservation-expired:old-N`, receipt
 * `receipt-old-N`, recipient `cN@example.com`). Callers add attempts,
 * messages or events to these rows as their statements need.
 */
export async function insertSentStories(pool: pg.Pool, schema: string, count: number): Promise<void> {
  const s = ident(schema);
  await pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, expired_at, request_hash)
     SELECT 'old-' || i, 'c' || i || '@example.com', 'expired', now() - interval '2 days', now() - interval '2 days', 'x'
       FROM generate_series(1, $1::int) i`,
    [count],
  );
  await pool.query(
    `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, sent_at, finished_at, receipt)
     SELECT 'reservation-expired:' || id, id, customer_email, 'reservation-expired', 'sent', now(), now(), now(), now(), 'receipt-' || id
       FROM ${s}.support_reservations`,
  );
}
