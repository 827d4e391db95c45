import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { migrate, loadMigrations } from '../../src/db/migrate.js';
import { rateLimiterResume } from '../../src/tables/rate-limiter.js';
import { deliveryResume } from '../../src/tables/delivery-control.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { intentsLease } from '../../src/tables/outbox.js';
import { attemptsList } from '../../src/tables/attempts.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { replayIntent } from '../../src/ops/replay.js';
import type { SendResult } from '../../src/providers/gateway.js';
import { PostmarkGateway } from '../../src/providers/postmark.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { Faults } from '../../src/runtime/faults.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { FakePostmark } from '../helpers/fake-postmark.js';
import { insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

/**
 * SPEC invariant 10: any ambiguous attempt of an intent, not only the latest,
 * flags a later acceptance as a possible duplicate and makes adapters that
 * can look a message up do so before sending again.
 */

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('duplicates');
});
afterAll(() => db.close());

let clock: ManualClock;
let prefix = 0;
let intentId: string;
beforeEach(async () => {
  await readyToSend();
  await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`);
  const [holdId] = await insertDueHolds(db.pool, db.schema, 1, { prefix: `d${++prefix}` });
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  intentId = `reservation-expired:${holdId}`;
  const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
  clock = new ManualClock(rows[0]!.now);
});

/** Undo the fleet-wide effects of a 429 or a pause (they run on the real clock), so the next round can send. */
async function readyToSend(): Promise<void> {
  await deliveryResume(db.pool, db.schema);
  await rateLimiterResume(db.pool, db.schema, null);
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
  await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET cooldown_until = NULL, tokens = burst, refilled_at = now()`);
}

const LEASE_MS = 30_000;
const worker = (gateway: ConstructorParameters<typeof DeliveryWorker>[0]['gateway'], faults?: Faults) =>
  new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, clock, leaseMs: LEASE_MS, random: () => 0.5, ...(faults ? { faults } : {}) });

/** The worker "dies" after the provider accepted and before the receipt is recorded: its lease is left to expire. */
const dieAfterAcceptance = new Faults((point) => {
  if (point === 'delivery.accepted') throw new Error('killed after acceptance');
});

/** Round 1 accepted then died; round 2 answers `middle`; round 3 is accepted. */
async function acceptedDiedThen(gateway: ScriptedGateway | PostmarkGateway): Promise<void> {
  await expect(worker(gateway, dieAfterAcceptance).runOnce()).rejects.toThrow('killed after acceptance');
  clock.advance(LEASE_MS + 1);
  expect((await worker(gateway).runOnce()).leased).toBe(1);
  await readyToSend();
  clock.advance(10 * 60_000); // past any retry-after or backoff
  expect((await worker(gateway).runOnce()).leased).toBe(1);
}

describe('an ambiguous attempt followed by a clear one', () => {
  const middles: Array<[string, SendResult, string]> = [
    ['rate-limited (429)', { kind: 'rate_limited', retryAfterMs: 1000, reason: '429 too many requests' }, 'rate_limited'],
    ['failed, never sent', { kind: 'failed', reason: 'connection refused', outcomeUnknown: false }, 'failed'],
    ['paused', { kind: 'paused', reason: 'sender not verified' }, 'paused'],
  ];

  it.each(middles)('middle attempt %s: the final acceptance is a possible duplicate', async (_, middle, middleOutcome) => {
    const gateway = new ScriptedGateway().script(intentId, { kind: 'accepted', receipt: 'first' }, middle, { kind: 'accepted', receipt: 'third' });
    await acceptedDiedThen(gateway);
    // Every attempt after the unrecorded acceptance is told about it, not only the next one.
    expect(gateway.calls.map((c) => c.context)).toEqual([
      { attempt: 1, previousOutcomeUnknown: false },
      { attempt: 2, previousOutcomeUnknown: true },
      { attempt: 3, previousOutcomeUnknown: true },
    ]);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', possibleDuplicate: true });
    const attempts = await attemptsList(db.pool, db.schema, intentId);
    expect(attempts.map((a) => a.outcome)).toEqual(['lease_expired', middleOutcome, 'accepted']);
  });

  it.each([
    ['an ambiguous failure (timeout) two attempts back still flags the acceptance', true],
    ['clear attempts only: nothing is flagged', false],
  ] as const)('%s', async (_name, firstUnknown) => {
    const gateway = new ScriptedGateway().script(
      intentId,
      { kind: 'failed', reason: firstUnknown ? 'timeout' : 'connection refused', outcomeUnknown: firstUnknown },
      { kind: 'rate_limited', retryAfterMs: 1000, reason: '429' },
      { kind: 'accepted', receipt: 'third' },
    );
    await worker(gateway).runOnce();
    clock.advance(60_000);
    await worker(gateway).runOnce();
    await readyToSend();
    clock.advance(10 * 60_000);
    await worker(gateway).runOnce();
    expect(gateway.calls.map((c) => c.context.previousOutcomeUnknown)).toEqual([false, firstUnknown, firstUnknown]);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', possibleDuplicate: firstUnknown });
  });

  it('a provider that deduplicates on the key is told too, but its acceptance is not flagged', async () => {
    const gateway = new ScriptedGateway(undefined, true).script(
      intentId,
      { kind: 'accepted', receipt: 'first' },
      { kind: 'rate_limited', retryAfterMs: 1000, reason: '429' },
      { kind: 'accepted', receipt: 'third' },
    );
    await acceptedDiedThen(gateway);
    expect(gateway.calls.map((c) => c.context.previousOutcomeUnknown)).toEqual([false, true, true]);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', possibleDuplicate: false });
  });

  it('a replay starts a new round: earlier ambiguity does not flag the deliberate resend', async () => {
    const gateway = new ScriptedGateway().script(
      intentId,
      { kind: 'failed', reason: 'timeout', outcomeUnknown: true },
      { kind: 'accepted', receipt: 'second' },
    );
    await worker(gateway).runOnce();
    clock.advance(60_000);
    await worker(gateway).runOnce();
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', possibleDuplicate: true });
    await replayIntent(db.pool, intentId, { schema: db.schema });
    clock.advance(60_000);
    await worker(gateway).runOnce();
    expect(gateway.calls.map((c) => c.context.previousOutcomeUnknown)).toEqual([false, true, false]);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', possibleDuplicate: false, replays: 1 });
  });
});

describe('Postmark looks up before resending after any ambiguous attempt', () => {
  let fake: FakePostmark;
  beforeAll(async () => {
    fake = new FakePostmark();
    await fake.start();
  });
  afterAll(() => fake.stop());

  it('accepted, worker died, lookup rate-limited (429): the next attempt finds the message instead of sending it twice', async () => {
    const gateway = new PostmarkGateway({ serverToken: fake.serverToken, baseUrl: fake.url });
    const copies = () => fake.outbound.filter((m) => m.Metadata.intent_id === intentId);
    // Round 2's lookup is answered 429, so it neither finds nor sends.
    fake.queue({ status: 429, body: { ErrorCode: 429, Message: 'Rate limit exceeded' } }, '/messages/outbound');
    await acceptedDiedThen(gateway);
    expect(copies()).toHaveLength(1);
    const attempts = await attemptsList(db.pool, db.schema, intentId);
    expect(attempts.map((a) => a.outcome)).toEqual(['lease_expired', 'rate_limited', 'accepted']);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({
      state: 'sent',
      receipt: copies()[0]!.MessageID,
      possibleDuplicate: false, // reconciled by lookup, not sent again
    });
    const lookups = fake.requests.filter((r) => r.path === '/messages/outbound' && r.query.get('metadata_intent_id') === intentId);
    expect(lookups).toHaveLength(2);
  });
});

describe('migration 0005 backfills outcome_unknown_seen', () => {
  it('flags pending intents whose history holds an ambiguous attempt, and only those', async () => {
    const schema = `dup_backfill_${randomUUID().slice(0, 8)}`;
    const s = ident(schema);
    // Build the schema as it stood before 0005, with history written by the old code.
    const before = (await loadMigrations()).filter((m) => m.id < 5);
    await db.pool.query(`CREATE SCHEMA ${s}`);
    await db.pool.query(`CREATE TABLE ${s}.migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    for (const m of before) {
      await db.pool.query(`SET search_path TO ${s}; ${m.sql}; RESET search_path`);
      await db.pool.query(`INSERT INTO ${s}.migrations (id, name) VALUES ($1, $2)`, [m.id, m.name]);
    }
    try {
      await insertDueHolds(db.pool, schema, 3, { prefix: 'b' });
      // Expired as the code of that time did it: today's expiry statement names
      // columns added since (the tenant, migration 0020).
      await db.pool.query(
        `WITH expired AS (
           UPDATE ${s}.support_reservations SET status = 'expired', expired_at = now() WHERE status = 'held'
           RETURNING id, customer_email, expired_at)
         INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at)
         SELECT 'reservation-expired:' || id, id, customer_email, 'reservation-expired', 'pending', expired_at, expired_at FROM expired`,
      );
      const attempt = async (id: string, n: number, outcome: string, unknown: boolean) => {
        await db.pool.query(
          `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, started_at, finished_at, outcome, outcome_unknown)
           VALUES ($1, $2, gen_random_uuid(), now(), now(), $3, $4)`,
          [`reservation-expired:${id}`, n, outcome, unknown],
        );
        await db.pool.query(`UPDATE ${s}.email_outbox SET attempts = $2 WHERE id = $1`, [`reservation-expired:${id}`, n]);
      };
      await attempt('b-0', 1, 'lease_expired', true);
      await attempt('b-0', 2, 'rate_limited', false);
      await attempt('b-1', 1, 'failed', true);
      await attempt('b-2', 1, 'failed', false);
      await migrate(db.pool, schema);
      const { rows } = await db.pool.query<{ id: string; outcome_unknown_seen: boolean }>(
        `SELECT id, outcome_unknown_seen FROM ${s}.email_outbox ORDER BY id`,
      );
      expect(rows).toEqual([
        { id: 'reservation-expired:b-0', outcome_unknown_seen: true },
        { id: 'reservation-expired:b-1', outcome_unknown_seen: true },
        { id: 'reservation-expired:b-2', outcome_unknown_seen: false },
      ]);
      const leased = await intentsLease(db.pool, schema, { limit: 10, leaseMs: 30_000, token: randomUUID(), provider: 'x', now: null });
      expect(Object.fromEntries(leased.map((l) => [l.id, l.previousOutcomeUnknown]))).toEqual({
        'reservation-expired:b-0': true,
        'reservation-expired:b-1': true,
        'reservation-expired:b-2': false,
      });
    } finally {
      await db.pool.query(`DROP SCHEMA ${s} CASCADE`);
    }
  });
});
