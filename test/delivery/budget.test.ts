import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveAccounts } from '../../src/delivery/accounts.js';
import { RoundBudget } from '../../src/delivery/budget.js';
import type { SendRequest } from '../../src/delivery/requests.js';
import type { EmailGateway } from '../../src/providers/gateway.js';
import { Slots } from '../../src/runtime/slots.js';
import type { LeasedIntent } from '../../src/tables/outbox.js';
import { rateLimiterEnsure, rateLimiterGet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { ident } from '../../src/db/pool.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { silentLogger } from '../../src/observability/logger.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('budget');
});
afterAll(() => db.close());

const gateway = (batch: number): EmailGateway =>
  ({
    name: 'stand-in',
    idempotent: true,
    send: async () => ({ kind: 'accepted', receipt: 'r' }),
    ...(batch > 1 ? { maxBatch: batch, sendBatch: async () => ({ results: [] }) } : {}),
  }) as EmailGateway;

/** An account whose bucket holds `burst` permits and refills too slowly to matter. */
async function account(name: string, options: { batch: number; unit?: 'requests' | 'emails'; burst: number }) {
  const [resolved] = resolveAccounts({
    accounts: [{ name, gateway: gateway(options.batch), batch: options.batch, ...(options.unit ? { unit: options.unit } : {}) }],
    from: 'Shop <shop@example.org>',
  }).all;
  await rateLimiterEnsure(db.pool, db.schema, { perSecond: 0.001, burst: options.burst }, name);
  return resolved!;
}

const tokens = async (name: string) => Math.floor((await rateLimiterGet(db.pool, db.schema, null, name))!.tokens);
const single = (id: string): SendRequest => ({ kind: 'single', intent: { id } as LeasedIntent });
const batch = (...ids: string[]): SendRequest => ({ kind: 'batch', batchId: undefined, members: ids.map((id) => ({ id }) as LeasedIntent) });

describe('RoundBudget', () => {
  it('holds the slots it reserved until the round gives them back: unneeded ones at once, one per send as it ends, the rest at the end', async () => {
    const slots = new Slots(10);
    const budget = await RoundBudget.reserve(slots, 6, { pool: db.pool, schema: db.schema, roundEmails: 6 });
    expect(budget.freeSlots).toBe(6);
    expect(slots.available).toBe(4);
    budget.keepSlots(3);
    expect(slots.available).toBe(7);
    budget.requestDone();
    expect(slots.available).toBe(8);
    // Never more back than it held, however often it is asked.
    budget.keepSlots(5);
    await budget.release();
    await budget.release();
    expect(slots.available).toBe(10);
  });

  it('a permit per request: settling gives back what the requests did not use, or takes more, and the requests at the end wait', async () => {
    const acc = await account('per-request', { batch: 5, burst: 3 });
    const budget = await RoundBudget.reserve(new Slots(3), 3, { pool: db.pool, schema: db.schema, roundEmails: 15 });
    const grant = await budget.take(acc);
    expect(grant).toMatchObject({ permits: 3, emails: 15 });
    expect(await tokens('per-request')).toBe(0);
    budget.leased(acc, 6, 2);
    expect(budget.freeSlots).toBe(1);
    expect(await budget.settle(acc, [batch('a', 'b', 'c', 'd', 'e'), single('f')])).toHaveLength(2);
    expect(await tokens('per-request')).toBe(1);

    // Five requests on three permits: it takes the two more it needs, then has none for the last.
    const short = await account('short', { batch: 5, burst: 4 });
    const second = await RoundBudget.reserve(new Slots(3), 3, { pool: db.pool, schema: db.schema, roundEmails: 15 });
    expect((await second.take(short)).permits).toBe(3);
    const paid = await second.settle(short, ['a', 'b', 'c', 'd', 'e'].map(single));
    expect(paid.map((r) => (r.kind === 'single' ? r.intent.id : ''))).toEqual(['a', 'b', 'c', 'd']);
    expect(await tokens('short')).toBe(0);
  });

  it('a permit per email: what was leased and is not sent (suppressed, unrenderable) goes back', async () => {
    const acc = await account('per-email', { batch: 1, burst: 5 });
    const budget = await RoundBudget.reserve(new Slots(5), 5, { pool: db.pool, schema: db.schema, roundEmails: 5 });
    expect((await budget.take(acc)).permits).toBe(5);
    // The lease statement gave back the one it did not lease; the budget keeps one per leased email.
    budget.leased(acc, 4, 4);
    await budget.settle(acc, [single('a'), single('b')]);
    expect(await tokens('per-email')).toBe(2);
    // Settled once: a second settle gives nothing more back.
    await budget.settle(acc, []);
    expect(await tokens('per-email')).toBe(2);
  });

  it('a round that ends before it settles gives back its takes at release: the permits and the daily quota\'s count', async () => {
    const acc = await account('unsettled', { batch: 1, burst: 8 });
    const budget = await RoundBudget.reserve(new Slots(8), 8, { pool: db.pool, schema: db.schema, roundEmails: 8 });
    expect((await budget.take(acc)).permits).toBe(8);
    expect(await tokens('unsettled')).toBe(0);
    await budget.release();
    expect(await tokens('unsettled')).toBe(8);
    // Settled takes are not given back twice.
    const again = await RoundBudget.reserve(new Slots(8), 8, { pool: db.pool, schema: db.schema, roundEmails: 8 });
    await again.take(acc);
    await again.settle(acc, [single('a'), single('b')]);
    await again.release();
    // The two sent keep their permits; the six settled back are not given back again.
    expect(await tokens('unsettled')).toBe(6);
  });
});

describe('a delivery round that throws after its lease', () => {
  it('gives its permits and the quota count back: a quota account does not lose the emails it never sent', async () => {
    const s = ident(db.schema);
    const name = 'quota-thrown';
    await rateLimiterEnsure(db.pool, db.schema, { perSecond: 0.001, burst: 50 }, name);
    await insertDueHolds(db.pool, db.schema, 5, { prefix: 'thrown' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    // Storing the rendered messages fails: a real error from the database, after the lease.
    await db.pool.query(`ALTER TABLE ${s}.email_messages ADD CONSTRAINT refuse_all CHECK (false) NOT VALID`);
    try {
      const worker = new DeliveryWorker({
        pool: db.pool,
        schema: db.schema,
        accounts: [{ name, gateway: gateway(1), dailyQuota: 100 }],
        from: 'Shop <shop@example.org>',
        logger: silentLogger,
      });
      await expect(worker.runOnce()).rejects.toThrow(/refuse_all/);
    } finally {
      await db.pool.query(`ALTER TABLE ${s}.email_messages DROP CONSTRAINT refuse_all`);
    }
    const limiter = (await rateLimiterGet(db.pool, db.schema, null, name))!;
    expect(Math.floor(limiter.tokens)).toBe(50);
    expect(limiter.quotaUsedToday).toBe(0);
  });
});
