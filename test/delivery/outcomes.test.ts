import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { rateLimiterResume } from '../../src/tables/rate-limiter.js';
import { deliveryControlGet, deliveryResume } from '../../src/tables/delivery-control.js';
import { rateLimiterGet, rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { attemptsList } from '../../src/tables/attempts.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';
import type { EmailGateway, SendResult } from '../../src/providers/gateway.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('outcomes');
});
afterAll(() => db.close());

let clock: ManualClock;
let prefix = 0;
let intentId: string;
beforeEach(async () => {
  await deliveryResume(db.pool, db.schema);
  await rateLimiterResume(db.pool, db.schema, null);
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
  await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET cooldown_until = NULL`);
  await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`);
  const [holdId] = await insertDueHolds(db.pool, db.schema, 1, { prefix: `o${++prefix}` });
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  intentId = `reservation-expired:${holdId}`;
  const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
  clock = new ManualClock(rows[0]!.now);
});

const worker = (gateway: ScriptedGateway, extra: Partial<ConstructorParameters<typeof DeliveryWorker>[0]> = {}) =>
  new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, clock, random: () => 0.5, ...extra });

describe('send outcomes', () => {
  it('accepted: the intent is sent with its receipt and one attempt row', async () => {
    const gateway = new ScriptedGateway({ kind: 'accepted', receipt: 'msg' });
    const run = await worker(gateway).runOnce();
    expect(run).toMatchObject({ leased: 1, outcomes: { accepted: 1 } });
    const intent = await intentsGet(db.pool, db.schema, intentId);
    expect(intent).toMatchObject({ state: 'sent', receipt: 'msg-1', attempts: 1, leased: false, possibleDuplicate: false });
    const attempts = await attemptsList(db.pool, db.schema, intentId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attempt: 1, outcome: 'accepted', receipt: 'msg-1', provider: 'scripted' });
    // The message carries the intent id for recognising duplicates.
    expect(gateway.calls[0]!.message.headers['X-Leasehold-Intent-Id']).toBe(intentId);
    expect(gateway.calls[0]!.message.idempotencyKey).toBe(intentId);
  });

  it("a JavaScript gateway's looser answer is recorded as its columns hold it: a numeric receipt and code as text, a status given as text as a number", async () => {
    // A gateway of its own, not ScriptedGateway, which would make the receipt text.
    const loose: EmailGateway = { name: 'loose', idempotent: false, send: async () => ({ kind: 'accepted', receipt: 12345, providerStatus: '202', providerCode: 7 }) as unknown as SendResult };
    await new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway: loose, clock }).runOnce();
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', receipt: '12345' });
    expect((await attemptsList(db.pool, db.schema, intentId))[0]).toMatchObject({ outcome: 'accepted', receipt: '12345', providerStatus: 202, providerCode: '7' });
  });

  it('an acceptance without a receipt is recorded as sent under one naming the attempt, not sent again', async () => {
    const bare: EmailGateway = { name: 'bare', idempotent: false, send: async () => ({ kind: 'accepted' }) as unknown as SendResult };
    const w = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway: bare, clock });
    expect(await w.runOnce()).toMatchObject({ leased: 1, outcomes: { accepted: 1 } });
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', receipt: `no-receipt:${intentId}:1` });
    clock.advance(3600_000);
    expect((await w.runOnce()).leased).toBe(0);
  });

  it('a status that is no whole number is left out, and the outcome is recorded all the same', async () => {
    const loose = { kind: 'rejected', reason: 'refused', providerStatus: 550.5 } as unknown as SendResult;
    await worker(new ScriptedGateway().script(intentId, loose)).runOnce();
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'rejected', lastError: 'refused' });
    expect((await attemptsList(db.pool, db.schema, intentId))[0]).toMatchObject({ outcome: 'rejected', providerStatus: null });
  });

  it('rate-limited keeps the row and its attempt budget, moves available_at, and cools the fleet down', async () => {
    const gateway = new ScriptedGateway().script(intentId, { kind: 'rate_limited', retryAfterMs: 30_000, reason: '429' });
    const before = clock.now();
    await worker(gateway).runOnce();
    const intent = (await intentsGet(db.pool, db.schema, intentId))!;
    expect(intent).toMatchObject({ state: 'pending', attempts: 1, failedAttempts: 0, leased: false });
    // retry-after plus jitter: never earlier than the provider asked.
    const delay = intent.availableAt.getTime() - before.getTime();
    expect(delay).toBeGreaterThanOrEqual(30_000);
    expect(delay).toBeLessThanOrEqual(30_000 + 7_500);
    const limiter = (await rateLimiterGet(db.pool, db.schema))!;
    expect(limiter.cooldownUntil!.getTime()).toBeGreaterThan(Date.now() + 25_000);
    // Nobody in the fleet gets permits during the cooldown.
    const next = await worker(new ScriptedGateway()).runOnce();
    expect(next).toMatchObject({ leased: 0, blocked: 'cooling-down' });
  });

  it('rejected is terminal and never retried', async () => {
    const gateway = new ScriptedGateway().script(intentId, { kind: 'rejected', reason: 'inactive recipient', providerCode: '406' });
    await worker(gateway).runOnce();
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'rejected', lastError: 'inactive recipient' });
    clock.advance(24 * 3600_000);
    expect((await worker(gateway).runOnce()).leased).toBe(0);
    expect(gateway.calls).toHaveLength(1);
  });

  it('failed backs off with jitter, counts against max attempts, then ends dead', async () => {
    const gateway = new ScriptedGateway().script(intentId, { kind: 'failed', reason: '503', outcomeUnknown: true });
    const w = worker(gateway, { maxAttempts: 3 });
    await w.runOnce();
    let intent = (await intentsGet(db.pool, db.schema, intentId))!;
    expect(intent).toMatchObject({ state: 'pending', failedAttempts: 1 });
    // Full jitter at random()=0.5 over min(cap, 2 s * 2^0): 1 s.
    expect(intent.availableAt.getTime() - clock.now().getTime()).toBe(1000);
    expect((await w.runOnce()).leased).toBe(0); // not due yet
    clock.advance(1000);
    await w.runOnce();
    intent = (await intentsGet(db.pool, db.schema, intentId))!;
    expect(intent).toMatchObject({ state: 'pending', failedAttempts: 2 });
    expect(intent.availableAt.getTime() - clock.now().getTime()).toBe(2000);
    clock.advance(2000);
    await w.runOnce();
    intent = (await intentsGet(db.pool, db.schema, intentId))!;
    expect(intent).toMatchObject({ state: 'dead', failedAttempts: 3, attempts: 3 });
    const attempts = await attemptsList(db.pool, db.schema, intentId);
    expect(attempts.map((a) => [a.outcome, a.outcomeUnknown])).toEqual([
      ['failed', true],
      ['failed', true],
      ['failed', true],
    ]);
    clock.advance(3600_000);
    expect((await w.runOnce()).leased).toBe(0);
  });

  it("paused pauses the provider's account with the reason (not the fleet) and leaves the intent pending", async () => {
    const gateway = new ScriptedGateway().script(intentId, { kind: 'paused', reason: 'API key revoked', providerCode: 'invalid_api_key' });
    await worker(gateway).runOnce();
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'pending', failedAttempts: 0, leased: false });
    expect((await rateLimiterGet(db.pool, db.schema))!.pause).toMatchObject({ paused: true, reason: 'API key revoked', pausedBy: 'scripted' });
    expect(await deliveryControlGet(db.pool, db.schema)).toMatchObject({ paused: false });
    expect(await worker(new ScriptedGateway()).runOnce()).toMatchObject({ leased: 0, blocked: 'paused' });
    await rateLimiterResume(db.pool, db.schema, 'default');
    expect(await worker(new ScriptedGateway()).runOnce()).toMatchObject({ leased: 1, outcomes: { accepted: 1 } });
  });

  it('a send that throws or times out is failed with outcome unknown', async () => {
    const gateway = new ScriptedGateway().script(intentId, () => new Promise((_, reject) => setTimeout(() => reject(new Error('socket hang up')), 5)));
    await worker(gateway).runOnce();
    const [attempt] = await attemptsList(db.pool, db.schema, intentId);
    expect(attempt).toMatchObject({ outcome: 'failed', outcomeUnknown: true });
    expect(attempt!.error).toContain('socket hang up');
  });

  it('after an ambiguous attempt, a provider that cannot deduplicate gets the flag and the acceptance is a possible duplicate', async () => {
    const gateway = new ScriptedGateway().script(
      intentId,
      { kind: 'failed', reason: 'timeout', outcomeUnknown: true },
      { kind: 'accepted', receipt: 'second' },
    );
    const w = worker(gateway);
    await w.runOnce();
    clock.advance(60_000);
    await w.runOnce();
    expect(gateway.calls.map((c) => c.context.previousOutcomeUnknown)).toEqual([false, true]);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', possibleDuplicate: true });
  });
});
