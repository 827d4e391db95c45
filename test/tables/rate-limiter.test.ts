import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimiterGet, rateLimiterRefund, rateLimiterSet, rateLimiterTake } from '../../src/tables/rate-limiter.js';
import { deliveryResume } from '../../src/tables/delivery-control.js';
import { intentsLease } from '../../src/tables/outbox.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('rate_limiter');
  await deliveryResume(db.pool, db.schema);
});
afterAll(() => db.close());

// Ahead of the real clock: the bucket's time never moves backwards.
const base = Date.now() + 3_600_000;
const at = (ms: number) => new Date(base + ms);
const tokensAt = async (ms: number) => (await rateLimiterGet(db.pool, db.schema, at(ms)))!.tokens;

describe('giving back unused permits', () => {
  it('applies while no other take has moved the bucket, exactly', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 40, burst: 8 }, at(0));
    const a = await rateLimiterTake(db.pool, db.schema, 8, at(0));
    expect(a.granted).toBe(8);
    expect(new Date(a.bucketTime).getTime()).toBe(at(0).getTime());
    await rateLimiterRefund(db.pool, db.schema, 3, a.bucketTime);
    // As if only 5 were taken at 0 ms.
    expect(await tokensAt(0)).toBeCloseTo(3, 9);
    expect(await tokensAt(50)).toBeCloseTo(5, 9);
  });

  it('is dropped once another take refilled the bucket: tokens the cap absorbed are not handed out twice', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 40, burst: 8 }, at(10_000));
    await db.pool.query(`UPDATE "${db.schema}".rate_limiter SET tokens = 8`);
    const a = await rateLimiterTake(db.pool, db.schema, 8, at(10_000));
    expect(a.granted).toBe(8);
    // 200 ms later the bucket is full again and a second take empties it.
    const b = await rateLimiterTake(db.pool, db.schema, 8, at(10_200));
    expect(b.granted).toBe(8);
    // The first take's 4 unused permits come back late: on top of a bucket
    // that was full, they would let 12 go in 200 ms (bound: 8 + 40 x 0.2 = 16
    // over the whole window, but 8 + 4 in the last millisecond).
    await rateLimiterRefund(db.pool, db.schema, 4, a.bucketTime);
    expect(await tokensAt(10_200)).toBeCloseTo(0, 9);
    // The second take's own refund still applies.
    await rateLimiterRefund(db.pool, db.schema, 2, b.bucketTime);
    expect(await tokensAt(10_200)).toBeCloseTo(2, 9);
    const c = await rateLimiterTake(db.pool, db.schema, 8, at(10_201));
    expect(c.granted).toBe(2);
  });
});

describe("the day's quota count", () => {
  const quotaAt = async (ms: number) => (await rateLimiterGet(db.pool, db.schema, at(ms)))!.quotaUsedToday;

  it('gets back the permits of leases that found nothing, even after another take moved the bucket (idle rounds side by side)', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 40, burst: 8 }, at(20_000));
    await db.pool.query(`UPDATE "${db.schema}".rate_limiter SET tokens = 8, quota_day = NULL, quota_used = 0`);
    // Two rounds take permits, one after the other, and neither finds an intent to send.
    const a = await rateLimiterTake(db.pool, db.schema, 8, at(20_000));
    const b = await rateLimiterTake(db.pool, db.schema, 8, at(20_200));
    expect([a.granted, b.granted]).toEqual([8, 8]);
    expect(await quotaAt(20_200)).toBe(16);
    for (const take of [a, b]) {
      const leased = await intentsLease(db.pool, db.schema, {
        limit: take.granted,
        leaseMs: 30_000,
        token: randomUUID(),
        provider: 'sandbox',
        now: take.bucketTime,
        permits: { granted: take.granted, bucketTime: take.bucketTime },
      });
      expect(leased).toEqual([]);
    }
    // Nothing was sent, so nothing counts against the day.
    expect(await quotaAt(20_200)).toBe(0);
    // The tokens of the first take are still dropped (the bound), the second's come back.
    expect(await tokensAt(20_200)).toBeCloseTo(8, 9);
  });

  it('gets back a late refund too, while its tokens are dropped', async () => {
    await db.pool.query(`UPDATE "${db.schema}".rate_limiter SET tokens = 8, quota_day = NULL, quota_used = 0`);
    const a = await rateLimiterTake(db.pool, db.schema, 8, at(30_000));
    await rateLimiterTake(db.pool, db.schema, 8, at(30_200));
    await rateLimiterRefund(db.pool, db.schema, 5, a.bucketTime);
    expect(await quotaAt(30_200)).toBe(11);
    expect(await tokensAt(30_200)).toBeCloseTo(0, 9);
  });
});
