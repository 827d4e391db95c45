import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { holdsExpireDue, holdsExpireDueWithOutlook } from '../../src/tables/holds.js';
import { intentsLease, intentsLeaseOneTenant, intentsLeaseOneTenantTaking, intentsSweepDeadlines } from '../../src/tables/outbox.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { webhookEventsLease } from '../../src/tables/webhook-events.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { rowsReadFrom } from '../helpers/plans.js';

/**
 * Work held for later must cost nothing until it is due. Beside a few due
 * rows, thousands wait: holds expiring in an hour (a 20-minute hold at
 * 1,000 a second keeps 1.2 million held), intents waiting on a retry's
 * back-off with deadlines hours away, webhook events waiting on theirs.
 * Each lane's statement that takes due work in due order must stop its
 * index scan at the statement's clock, not read every waiting row and
 * drop it: that cost grew with the rows held for later (125 ms a round
 * beside 100,000 intents waiting, 60 ms an expiry batch beside 100,000
 * holds held), in the statements that run most often.
 */
const WAITING = 5000;
/** The due rows, a tenant's share of the walk, and a scan's lookahead: far below WAITING. */
const READ_AT_MOST = 100;

let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('held_for_later');
  s = ident(db.schema);
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1e6, burst: 1e6 });
  await db.pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, created_at, request_hash)
     SELECT 'later-' || g, 'customer+' || g || '@example.com', now() + interval '1 hour' + make_interval(secs => g), now(), 'seeded'
       FROM generate_series(1, $1::int) g
     UNION ALL
     SELECT 'due-' || g, 'customer+due' || g || '@example.com', now() - make_interval(secs => g), now() - interval '1 hour', 'seeded'
       FROM generate_series(1, 3) g`,
    [WAITING],
  );
  // Intents of one tenant: most waiting on a retry (available in an hour, due to be sent within three), three due now.
  await db.pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, expired_at, request_hash)
     SELECT 'sent-' || g, 'c' || g || '@example.com', 'expired', now() - interval '1 hour', now() - interval '2 hours', now() - interval '1 hour', 'seeded'
       FROM generate_series(1, $1::int + 3) g`,
    [WAITING],
  );
  await db.pool.query(
    `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, send_by, created_at)
     SELECT 'reservation-expired:' || r.id, r.id, r.customer_email, 'reservation-expired', 'pending',
            CASE WHEN g <= 3 THEN now() - interval '1 minute' ELSE now() + interval '1 hour' + make_interval(secs => g) END,
            now() + interval '3 hours', now() - interval '1 hour'
       FROM (SELECT r.*, row_number() OVER (ORDER BY r.id) AS g FROM ${s}.support_reservations r WHERE r.id LIKE 'sent-%') r`,
  );
  await db.pool.query(
    `INSERT INTO ${s}.webhook_events (id, endpoint, type, hold_id, payload, occurred_at, created_at, state, available_at)
     SELECT 'msg_' || g, 'app', 'hold.expired', 'h' || g, '{}', now(), now(), 'pending',
            CASE WHEN g = 1 THEN now() - interval '1 second' ELSE now() + interval '1 hour' + make_interval(secs => g) END
       FROM generate_series(1, $1::int + 1) g`,
    [WAITING],
  );
  for (const table of ['support_reservations', 'email_outbox', 'webhook_events']) await db.pool.query(`ANALYZE ${s}.${table}`);
});
afterAll(() => db.close());

const lease = () => ({ limit: 50, leaseMs: 30_000, token: randomUUID(), provider: 'sandbox', now: null });

describe('rows held for later are not read until they are due', () => {
  it('the seed is what the tests read against: a few due rows beside thousands waiting', async () => {
    const { rows } = await db.pool.query<{ holds: number; intents: number; events: number }>(
      `SELECT (SELECT count(*) FROM ${s}.support_reservations WHERE status = 'held' AND expires_at > now())::int AS holds,
              (SELECT count(*) FROM ${s}.email_outbox WHERE state = 'pending' AND available_at > now())::int AS intents,
              (SELECT count(*) FROM ${s}.webhook_events WHERE state = 'pending' AND available_at > now())::int AS events`,
    );
    expect(rows[0]).toEqual({ holds: WAITING, intents: WAITING, events: WAITING });
  });

  it('the expiry statement, alone, with its outlook, and handing off, reads the due holds, not the held ones', async () => {
    const alone = await rowsReadFrom(db.pool, 'support_reservations', (q) => holdsExpireDue(q, db.schema, 100, null));
    const withOutlook = await rowsReadFrom(db.pool, 'support_reservations', (q) => holdsExpireDueWithOutlook(q, db.schema, 100, null, null, null));
    const handing = await rowsReadFrom(db.pool, 'support_reservations', (q) =>
      holdsExpireDueWithOutlook(q, db.schema, 100, null, null, null, { token: randomUUID(), leaseMs: 30_000, provider: 'sandbox', account: 'default', limit: 100, emailsPerPermit: 1 }),
    );
    // It did find the due ones (each read at least when locked and when updated).
    for (const read of [alone, withOutlook, handing]) {
      expect(read).toBeGreaterThanOrEqual(3);
      expect(read).toBeLessThan(READ_AT_MOST);
    }
  });

  it('the lease, in its one-tenant forms and its fair form with one tenant and with three, reads the due intents, not those waiting on a retry', async () => {
    const reads = [
      await rowsReadFrom(db.pool, 'email_outbox', (q) => intentsLeaseOneTenant(q, db.schema, lease())),
      await rowsReadFrom(db.pool, 'email_outbox', (q) => intentsLeaseOneTenantTaking(q, db.schema, lease())),
      await rowsReadFrom(db.pool, 'email_outbox', (q) => intentsLease(q, db.schema, lease())),
    ];
    await db.pool.query(`UPDATE ${s}.email_outbox SET tenant = 't' || (abs(hashtext(id)) % 3)`);
    await db.pool.query(`ANALYZE ${s}.email_outbox`);
    try {
      reads.push(await rowsReadFrom(db.pool, 'email_outbox', (q) => intentsLease(q, db.schema, lease())));
    } finally {
      await db.pool.query(`UPDATE ${s}.email_outbox SET tenant = ''`);
    }
    // Each found the due ones (read when locked, and again when leased).
    for (const read of reads) {
      expect(read).toBeGreaterThanOrEqual(3);
      expect(read).toBeLessThan(READ_AT_MOST);
    }
  });

  it('the deadline sweep reads the deadlines passed, not those still ahead', async () => {
    await db.pool.query(`UPDATE ${s}.email_outbox SET send_by = now() - interval '1 second' WHERE id IN (SELECT id FROM ${s}.email_outbox ORDER BY available_at LIMIT 2)`);
    const read = await rowsReadFrom(db.pool, 'email_outbox', (q) => intentsSweepDeadlines(q, db.schema, null, 100));
    expect(read).toBeGreaterThanOrEqual(2);
    expect(read).toBeLessThan(READ_AT_MOST);
  });

  it('the webhook lease reads the event due, not those waiting on their back-off', async () => {
    const read = await rowsReadFrom(db.pool, 'webhook_events', (q) => webhookEventsLease(q, db.schema, { endpoint: 'app', limit: 10, leaseMs: 30_000 }));
    expect(read).toBeGreaterThanOrEqual(1);
    expect(read).toBeLessThan(READ_AT_MOST);
  });
});
