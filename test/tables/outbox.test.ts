import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { intentsLease, intentsRecord, type AttemptResult } from '../../src/tables/outbox.js';
import { attemptsList } from '../../src/tables/attempts.js';
import { intentsGet, intentsReplay } from '../../src/tables/outbox.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('leases');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
});
afterAll(() => db.close());

let clock: ManualClock;
let prefix = 0;
let intentId: string;
beforeEach(async () => {
  await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`);
  const [holdId] = await insertDueHolds(db.pool, db.schema, 1, { prefix: `l${++prefix}` });
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  intentId = `reservation-expired:${holdId}`;
  const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
  clock = new ManualClock(rows[0]!.now);
});

const lease = (token: string) =>
  intentsLease(db.pool, db.schema, { limit: 10, leaseMs: 30_000, token, provider: 'scripted', now: clock.now() });

const result = (token: string, attempt: number, outcome: AttemptResult['outcome'], extra: Partial<AttemptResult> = {}): AttemptResult => ({
  id: intentId,
  token,
  attempt,
  outcome,
  receipt: null,
  error: outcome === 'accepted' ? null : 'x',
  delayMs: 5000,
  providerStatus: null,
  providerCode: null,
  outcomeUnknown: false,
  durationMs: 1,
  duplicateRisk: false,
  ...extra,
});

describe('leases', () => {
  it('a leased intent is invisible to other workers until its lease expires', async () => {
    const first = await lease(randomUUID());
    expect(first.map((i) => i.id)).toEqual([intentId]);
    expect(await lease(randomUUID())).toEqual([]);
    clock.advance(29_999);
    expect(await lease(randomUUID())).toEqual([]);
    clock.advance(1);
    const again = await lease(randomUUID());
    expect(again).toHaveLength(1);
    expect(again[0]).toMatchObject({ attempts: 2, leaseWasExpired: true, previousOutcomeUnknown: true });
  });

  it('an expired lease makes the intent eligible again, counted, with the dead attempt closed', async () => {
    await lease(randomUUID()); // a worker that will never report back
    clock.advance(31_000);
    const gateway = new ScriptedGateway({ kind: 'accepted', receipt: 'ok' });
    const run = await new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, clock }).runOnce();
    expect(run.outcomes).toEqual({ accepted: 1 });
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', leaseExpirations: 1, attempts: 2 });
    const attempts = await attemptsList(db.pool, db.schema, intentId);
    expect(attempts.map((a) => a.outcome)).toEqual(['lease_expired', 'accepted']);
    expect(gateway.calls[0]!.context).toEqual({ attempt: 2, previousOutcomeUnknown: true });
  });

  it('a stale lease holder cannot release, reject or fail an intent it no longer owns', async () => {
    const stale = randomUUID();
    await lease(stale);
    clock.advance(31_000);
    const current = randomUUID();
    await lease(current);
    const before = (await intentsGet(db.pool, db.schema, intentId))!;
    for (const outcome of ['failed', 'rejected', 'rate_limited', 'paused', 'abandoned'] as const) {
      const [recorded] = await intentsRecord(db.pool, db.schema, [result(stale, 1, outcome)], { maxAttempts: 1, now: clock.now() });
      expect(recorded).toMatchObject({ applied: false, state: 'pending' });
    }
    const after = (await intentsGet(db.pool, db.schema, intentId))!;
    expect(after).toEqual(before); // still leased by the current holder, untouched
    // The current holder's result applies.
    const [mine] = await intentsRecord(db.pool, db.schema, [result(current, 2, 'rejected')], { maxAttempts: 10, now: clock.now() });
    expect(mine).toMatchObject({ applied: true, state: 'rejected' });
  });

  it('a late receipt from a stale lease still marks the intent sent, and a second acceptance is a possible duplicate', async () => {
    const stale = randomUUID();
    await lease(stale);
    clock.advance(31_000);
    const current = randomUUID();
    await lease(current);
    const [late] = await intentsRecord(db.pool, db.schema, [result(stale, 1, 'accepted', { receipt: 'late-receipt' })], {
      maxAttempts: 10,
      now: clock.now(),
    });
    expect(late).toMatchObject({ applied: true, state: 'sent', possibleDuplicate: false });
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', receipt: 'late-receipt', leased: false });
    // The current holder's failure is fenced out; its acceptance is recorded as a duplicate.
    expect((await intentsRecord(db.pool, db.schema, [result(current, 2, 'failed')], { maxAttempts: 10, now: clock.now() }))[0]).toMatchObject({ applied: false });
    await intentsRecord(db.pool, db.schema, [result(current, 2, 'accepted', { receipt: 'second' })], { maxAttempts: 10, now: clock.now() });
    const intent = (await intentsGet(db.pool, db.schema, intentId))!;
    expect(intent).toMatchObject({ state: 'sent', receipt: 'late-receipt', possibleDuplicate: true });
    const attempts = await attemptsList(db.pool, db.schema, intentId);
    expect(attempts.map((a) => [a.outcome, a.receipt])).toEqual([
      ['accepted', 'late-receipt'],
      ['accepted', 'second'],
    ]);
  });

  it('one record of applied and fenced results answers each once: the applied as written, the fenced as its row stands', async () => {
    const [otherHold] = await insertDueHolds(db.pool, db.schema, 1, { prefix: `l${++prefix}` });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const otherId = `reservation-expired:${otherHold}`;
    clock = new ManualClock((await db.pool.query<{ now: Date }>('SELECT now()')).rows[0]!.now);
    const stale = randomUUID();
    expect(await lease(stale)).toHaveLength(2);
    clock.advance(31_000);
    const current = randomUUID();
    await lease(current);
    // The stale holder reports both: its acceptance applies, its failure is fenced.
    const recorded = await intentsRecord(
      db.pool,
      db.schema,
      [result(stale, 1, 'accepted', { receipt: 'r-1' }), { ...result(stale, 1, 'failed'), id: otherId }],
      { maxAttempts: 1, now: clock.now() },
    );
    expect(recorded).toHaveLength(2);
    const byId = new Map(recorded.map((r) => [r.id, r]));
    expect(byId.get(intentId)).toMatchObject({ applied: true, state: 'sent', attempts: 2, possibleDuplicate: false });
    expect(byId.get(otherId)).toMatchObject({ applied: false, state: 'pending', attempts: 2, possibleDuplicate: false });
  });

  it('a replayed intent whose last attempt was left open gets it closed by its next lease', async () => {
    const stale = randomUUID();
    await lease(stale);
    clock.advance(31_000);
    await lease(randomUUID()); // attempt 2, whose holder never reports back
    await intentsRecord(db.pool, db.schema, [result(stale, 1, 'accepted', { receipt: 'late' })], { maxAttempts: 10, now: clock.now() });
    expect((await attemptsList(db.pool, db.schema, intentId)).map((a) => a.outcome)).toEqual(['accepted', null]);
    expect(await intentsReplay(db.pool, db.schema, intentId, clock.now())).toBe(true);
    expect(await lease(randomUUID())).toMatchObject([{ id: intentId, attempts: 3 }]);
    expect((await attemptsList(db.pool, db.schema, intentId)).map((a) => a.outcome)).toEqual(['accepted', 'lease_expired', null]);
  });

  it('a late receipt after the intent went dead still marks it sent', async () => {
    const token = randomUUID();
    await lease(token);
    await intentsRecord(db.pool, db.schema, [result(token, 1, 'failed')], { maxAttempts: 1, now: clock.now() });
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'dead' });
    await intentsRecord(db.pool, db.schema, [result(token, 1, 'accepted', { receipt: 'it-went-out' })], { maxAttempts: 1, now: clock.now() });
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', receipt: 'it-went-out' });
  });

  it('stop() lets the send in flight finish and records it', async () => {
    let release!: () => void;
    const inFlight = new Promise<void>((r) => (release = r));
    const gateway = new ScriptedGateway(async () => {
      await inFlight;
      return { kind: 'accepted', receipt: 'slow' };
    });
    const worker = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, pollIntervalMs: 10 });
    worker.start();
    while (gateway.calls.length === 0) await new Promise((r) => setTimeout(r, 5));
    const stopped = worker.stop();
    release();
    await stopped;
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', leased: false });
  });
});
