import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident, type Queryable } from '../../src/db/pool.js';
import { eventsForIntent, eventsInsert } from '../../src/tables/events.js';
import { suppressionsFind } from '../../src/tables/suppressions.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertSentStories } from '../helpers/holds.js';
import { planOf as planRecorded } from '../helpers/plans.js';

/**
 * Event matching and the suppression check run per webhook and per delivery
 * round: with a long history (every accepted attempt has its own receipt,
 * as real provider ids do), they must reach rows through indexes, not scans.
 * The plans are of the statements the code really sends.
 */

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('event_plans');
  const s = ident(db.schema);
  await insertSentStories(db.pool, db.schema, 30_000);
  await db.pool.query(
    `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, started_at, finished_at, outcome, receipt)
     SELECT id, 1, gen_random_uuid(), now() - interval '2 days', now() - interval '2 days', 'accepted', receipt FROM ${s}.email_outbox`,
  );
  await db.pool.query(
    `INSERT INTO ${s}.email_events (provider, provider_event_id, provider_message_id, intent_id, kind, occurred_at)
     SELECT 'resend', 'evt-' || id, receipt, id, 'delivered', now() - interval '2 days' FROM ${s}.email_outbox`,
  );
  await db.pool.query(
    `INSERT INTO ${s}.suppressions (address_hash, address, reason)
     SELECT encode(sha256(convert_to('s' || i || '@example.com', 'UTF8')), 'hex'), 's' || i || '@example.com', 'hard_bounce'
       FROM generate_series(1, 20000) i`,
  );
  for (const table of ['support_reservations', 'email_outbox', 'email_attempts', 'email_events', 'suppressions']) await db.pool.query(`ANALYZE ${s}.${table}`);
});
afterAll(() => db.close());

const planOf = (call: (db: Queryable) => Promise<unknown>) => planRecorded(db.pool, call);

describe('provider events and suppressions use their indexes', () => {
  it('an arriving event finds its intent through email_attempts_receipt', async () => {
    const event = {
      provider: 'resend' as const,
      providerEventId: 'evt-new',
      messageId: 'receipt-old-17',
      kind: 'delivered' as const,
      bounceType: null,
      providerType: null,
      reason: null,
      occurredAt: new Date(),
      recipients: [],
    };
    const text = await planOf((q) => eventsInsert(q, db.schema, [event]));
    expect(text, text).toContain('email_attempts_receipt');
    expect(text, text).not.toMatch(/Seq Scan on email_attempts/);
  });

  it("a trace reads the intent's events through email_events_intent and email_events_message", async () => {
    const text = await planOf((q) => eventsForIntent(q, db.schema, 'reservation-expired:old-17'));
    expect(text, text).not.toMatch(/Seq Scan on email_events/);
    expect(text, text).not.toMatch(/Seq Scan on email_attempts/);
  });

  it("the delivery round's suppression check is a primary-key lookup", async () => {
    const text = await planOf((q) => suppressionsFind(q, db.schema, ['a'.repeat(64), 'b'.repeat(64)]));
    expect(text, text).toContain('suppressions_pkey');
  });
});
