import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The hot paths must not grow with history: with many finished rows and a
 * few live ones, the planner must reach the live rows through the partial
 * indexes, not by scanning the tables.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('indexes');
  const s = ident(db.schema);
  await db.pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, expired_at, request_hash)
     SELECT 'old-' || i, 'c@example.com', 'expired', now() - interval '2 days', now() - interval '2 days', 'x'
       FROM generate_series(1, 50000) i`,
  );
  await db.pool.query(
    `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, sent_at, finished_at, receipt)
     SELECT 'reservation-expired:' || id, id, 'c@example.com', 'reservation-expired', 'sent', now(), now(), now(), now(), 'r'
       FROM ${s}.support_reservations`,
  );
  await db.pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash)
     SELECT 'live-' || i, 'c@example.com', now() + make_interval(secs => i), 'x' FROM generate_series(1, 20) i`,
  );
  await db.pool.query(`ANALYZE ${s}.support_reservations`);
  await db.pool.query(`ANALYZE ${s}.email_outbox`);
});
afterAll(() => db.close());

async function plan(sql: string, values: unknown[] = []): Promise<string> {
  const { rows } = await db.pool.query(`EXPLAIN ${sql}`, values);
  return rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
}

describe('hot paths use partial indexes', () => {
  it('the expiry scan reads support_reservations_due', async () => {
    const text = await plan(
      `SELECT id FROM ${ident(db.schema)}.support_reservations
        WHERE status = 'held' AND expires_at <= now() ORDER BY expires_at LIMIT 500 FOR UPDATE SKIP LOCKED`,
    );
    expect(text).toContain('support_reservations_due');
    expect(text).not.toMatch(/Seq Scan on support_reservations/);
  });

  it('the lease scan reads email_outbox_available', async () => {
    const text = await plan(
      `SELECT id FROM ${ident(db.schema)}.email_outbox
        WHERE state = 'pending' AND available_at <= now() ORDER BY available_at LIMIT 50 FOR UPDATE SKIP LOCKED`,
    );
    expect(text).toContain('email_outbox_available');
    expect(text).not.toMatch(/Seq Scan on email_outbox/);
  });

  it('the oldest-pending age reads email_outbox_pending_age', async () => {
    const text = await plan(`SELECT min(created_at) FROM ${ident(db.schema)}.email_outbox WHERE state = 'pending'`);
    expect(text).toContain('email_outbox_pending_age');
  });
});
