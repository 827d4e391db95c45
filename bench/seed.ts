import type pg from 'pg';
import { ident } from '../src/db/pool.js';

/**
 * Seed `count` held holds in one INSERT ... SELECT generate_series.
 * `firstDueMs` is relative to now (negative = already due) and consecutive
 * holds fall due `spacingMs` apart. VACUUM ANALYZE afterwards so every
 * measured run starts from the same table state (visibility map, stats).
 */
export async function seedHolds(
  pool: pg.Pool,
  schema: string,
  count: number,
  options: { firstDueMs: number; spacingMs: number; prefix?: string; analyze?: boolean },
): Promise<void> {
  const s = ident(schema);
  await pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, request_hash)
     SELECT $4 || g, 'customer' || g || '@example.com', 'held',
            now() + make_interval(secs => ($2::float8 + (g - 1) * $3::float8) / 1000),
            now() - interval '1 hour', 'seeded'
       FROM generate_series(1, $1::int) AS g`,
    [count, options.firstDueMs, options.spacingMs, options.prefix ?? 'h'],
  );
  if (options.analyze === false) return;
  await pool.query(`VACUUM ANALYZE ${s}.support_reservations`);
  await pool.query(`VACUUM ANALYZE ${s}.email_outbox`);
}

/**
 * Seed `count` pending intents (and their expired holds, for the foreign
 * key), all available now, in two INSERT ... SELECT statements.
 */
export async function seedPendingIntents(pool: pg.Pool, schema: string, count: number): Promise<void> {
  const s = ident(schema);
  await pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, expired_at, request_hash)
     SELECT 'h' || g, 'customer' || g || '@example.com', 'expired',
            now() - interval '1 hour', now() - interval '2 hours', now() - interval '1 hour', 'seeded'
       FROM generate_series(1, $1::int) AS g`,
    [count],
  );
  await pool.query(
    `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at)
     SELECT 'reservation-expired:' || r.id, r.id, r.customer_email, 'reservation-expired', 'pending', r.expired_at, r.expired_at
       FROM ${s}.support_reservations r`,
  );
  await pool.query(`VACUUM ANALYZE ${s}.support_reservations`);
  await pool.query(`VACUUM ANALYZE ${s}.email_outbox`);
  await pool.query(`VACUUM ANALYZE ${s}.email_attempts`);
}

/**
 * Seed `count` confirmed (terminal) holds: the history a long-running
 * deployment accumulates, which hot-path statements must not scan.
 */
export async function seedHistory(pool: pg.Pool, schema: string, count: number): Promise<void> {
  if (count <= 0) return;
  await pool.query(
    `INSERT INTO ${ident(schema)}.support_reservations (id, customer_email, status, expires_at, created_at, confirmed_at, request_hash)
     SELECT 'old' || g, 'customer' || g || '@example.com', 'confirmed',
            now() - interval '2 days', now() - interval '3 days', now() - interval '2 days', 'seeded'
       FROM generate_series(1, $1::int) AS g`,
    [count],
  );
  await pool.query(`VACUUM ANALYZE ${ident(schema)}.support_reservations`);
}
