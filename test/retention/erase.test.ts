import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { ValidationError } from '../../src/errors.js';
import { createLogger } from '../../src/observability/logger.js';
import { intentsRecord, intentsLease } from '../../src/tables/outbox.js';
import { eraseAddress } from '../../src/retention/erase.js';
import { LogCapture } from '../helpers/server.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { writeStory, nonZero } from '../helpers/retention-stories.js';

let db: TestDatabase;
beforeEach(async () => {
  db = await testDatabase('erase');
});
afterEach(() => db.close());

const ANA = 'ana.lopez@example.com';

/** Every column that can hold the address, for Ana and for someone else. */
async function personalColumns(): Promise<string> {
  const s = ident(db.schema);
  const { rows } = await db.pool.query(
    `SELECT json_build_object(
       'holds', (SELECT json_agg(json_build_array(id, customer_email, request_hash, metadata) ORDER BY id) FROM ${s}.support_reservations),
       'intents', (SELECT json_agg(json_build_array(id, recipient, last_error) ORDER BY id) FROM ${s}.email_outbox),
       'attempts', (SELECT json_agg(json_build_array(intent_id, attempt, error) ORDER BY intent_id, attempt) FROM ${s}.email_attempts))::text AS t`,
  );
  return rows[0].t as string;
}

describe('erase --email', () => {
  it('reaches every column that holds the address, keeps the timeline, leaves other people alone, and reports per table', async () => {
    const anaMeta = { note: `call ${ANA} back`, tags: ['vip'] };
    await writeStory(db.pool, db.schema, { id: 'ana-sent', status: 'expired', endedDaysAgo: 3, email: 'Ana.Lopez@Example.com', metadata: anaMeta, intent: 'sent',
      lastError: `soft bounce for ${ANA}`, attempts: [{ outcome: 'failed', error: `450 <${ANA}> try later` }, { outcome: 'accepted' }] });
    await writeStory(db.pool, db.schema, { id: 'ana-confirmed', status: 'confirmed', endedDaysAgo: 1, email: ` ${ANA} ` });
    await writeStory(db.pool, db.schema, { id: 'ana-pending', status: 'expired', endedDaysAgo: 0, email: ANA, intent: 'pending', leased: true,
      attempts: [{ outcome: 'failed', error: 'timeout' }, { outcome: null }] });
    await writeStory(db.pool, db.schema, { id: 'ana-held', status: 'held', endedDaysAgo: 0, email: ANA });
    await writeStory(db.pool, db.schema, { id: 'bob', status: 'expired', endedDaysAgo: 3, email: 'bob@example.com', intent: 'dead',
      lastError: 'bounce bob@example.com', attempts: [{ outcome: 'failed', error: 'bounce bob@example.com' }] });
    const s = ident(db.schema);
    const timeline = `SELECT r.id, r.status, r.expires_at, r.expired_at, r.confirmed_at, o.state, o.sent_at, o.receipt, o.attempts
                        FROM ${s}.support_reservations r LEFT JOIN ${s}.email_outbox o ON o.reservation_id = r.id ORDER BY r.id`;
    const before = (await db.pool.query(timeline)).rows;

    const logs = new LogCapture();
    const report = await eraseAddress(db.pool, '  ANA.lopez@example.COM ', { schema: db.schema, logger: createLogger({ destination: logs }) });
    expect({ ...report, counts: nonZero(report.counts) }).toEqual({
      // 2 attempts scrubbed or closed: the failed one's error, the open one closed.
      counts: { email_attempts: 2, email_outbox: 2, support_reservations: 3 },
      rejectedPending: 1,
      inFlight: 1,
      heldHoldIds: ['ana-held'],
    });

    const after = await personalColumns();
    // The address is gone from everything but the held hold (a live reservation, reported).
    expect(after.toLowerCase().split(ANA).length - 1).toBe(1);
    expect(after).toContain('bob@example.com');
    const holds = (await db.pool.query(`SELECT id, customer_email, erased_at IS NOT NULL AS erased, request_hash, metadata FROM ${s}.support_reservations ORDER BY id`)).rows;
    expect(holds.find((h) => h.id === 'ana-sent')).toEqual({
      id: 'ana-sent', customer_email: null, erased: true, request_hash: 'erased', metadata: { note: 'call [erased] back', tags: ['vip'] },
    });
    expect(holds.find((h) => h.id === 'ana-held')).toMatchObject({ customer_email: ANA, erased: false });
    expect(holds.find((h) => h.id === 'bob')).toMatchObject({ customer_email: 'bob@example.com', erased: false });

    // The pending intent is rejected, so nothing more is sent; its open attempt is closed.
    const pending = (await db.pool.query(
      `SELECT state, recipient, last_error, lease_token, finished_at IS NOT NULL AS finished FROM ${s}.email_outbox WHERE reservation_id = 'ana-pending'`,
    )).rows[0];
    expect(pending).toEqual({ state: 'rejected', recipient: null, last_error: 'erased on request', lease_token: null, finished: true });
    const attempts = (await db.pool.query(
      `SELECT attempt, outcome, outcome_unknown, error FROM ${s}.email_attempts WHERE intent_id = 'reservation-expired:ana-pending' ORDER BY attempt`,
    )).rows;
    expect(attempts).toEqual([
      { attempt: 1, outcome: 'failed', outcome_unknown: false, error: 'timeout' },
      { attempt: 2, outcome: 'abandoned', outcome_unknown: true, error: 'erased on request before a result was recorded' },
    ]);

    // The timeline stays, except the pending intent that became rejected.
    const changed = (await db.pool.query(timeline)).rows;
    expect(changed.filter((r) => r.id !== 'ana-pending')).toEqual(before.filter((r) => r.id !== 'ana-pending'));

    // Logged once, with counts only.
    const events = logs.events().filter((e) => e.event === 'retention.erasure');
    expect(events).toHaveLength(1);
    expect(logs.text.toLowerCase()).not.toContain('ana.lopez');

    // Again: nothing left to change.
    const again = await eraseAddress(db.pool, ANA, { schema: db.schema });
    expect(nonZero(again.counts)).toEqual({});
    expect(again.heldHoldIds).toEqual(['ana-held']);
  });

  it('a send in flight when the intent was rejected is still recorded if the provider accepted it', async () => {
    await writeStory(db.pool, db.schema, { id: 'race', status: 'expired', endedDaysAgo: 0, email: ANA, intent: 'pending', attempts: [] });
    const token = randomUUID();
    const [leased] = await intentsLease(db.pool, db.schema, { limit: 1, leaseMs: 30_000, token, provider: 'sandbox', now: null });
    expect(leased?.recipient).toBe(ANA);
    await eraseAddress(db.pool, ANA, { schema: db.schema });
    const [recorded] = await intentsRecord(
      db.pool,
      db.schema,
      [{ id: leased!.id, token, attempt: 1, outcome: 'accepted', receipt: 'late', error: null, delayMs: 0, providerStatus: 200, providerCode: null,
         outcomeUnknown: false, durationMs: 5, duplicateRisk: false }],
      { maxAttempts: 10, now: null },
    );
    expect(recorded).toMatchObject({ state: 'sent', applied: true });
    const row = (await db.pool.query(`SELECT recipient, receipt FROM ${ident(db.schema)}.email_outbox`)).rows[0];
    expect(row).toEqual({ recipient: null, receipt: 'late' });
  });

  it('the delivery lane never leases an intent erased on request', async () => {
    await writeStory(db.pool, db.schema, { id: 'later', status: 'expired', endedDaysAgo: 0, email: ANA, intent: 'pending', attempts: [] });
    await eraseAddress(db.pool, ANA, { schema: db.schema });
    expect(await intentsLease(db.pool, db.schema, { limit: 10, leaseMs: 30_000, token: randomUUID(), provider: 'sandbox', now: null })).toEqual([]);
  });

  it('refuses what is not an address', async () => {
    for (const bad of ['', 'nobody', 'a@', 42, null, 'x'.repeat(250) + '@example.com']) {
      await expect(eraseAddress(db.pool, bad, { schema: db.schema })).rejects.toBeInstanceOf(ValidationError);
    }
  });
});
