import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimiterGet, rateLimiterRefund, rateLimiterSet, rateLimiterTake } from '../../src/tables/rate-limiter.js';
import { deliveryResume } from '../../src/tables/delivery-control.js';
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
