import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../../src/db/pool.js';
import { Presence } from '../../../src/db/presence.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { holdsExpireDueWithOutlook } from '../../../src/tables/holds.js';
import { deliveryPause, deliveryResume } from '../../../src/tables/delivery-control.js';
import type { HandOffLease } from '../../../src/tables/outbox.js';
import { rateLimiterSet } from '../../../src/tables/rate-limiter.js';
import { suppressionsAdd } from '../../../src/tables/suppressions.js';
import { tenantPause } from '../../../src/tables/tenants.js';
import { testDatabase, type TestDatabase } from '../../helpers/database.js';
import { insertDueHolds } from '../../helpers/holds.js';

/**
 * The expiry statement's hand-off (tables/outbox/hand-off.ts), run as the
 * expiry lane runs it: all of a batch's intents leased to the asking
 * worker, or none, and only when the fair lease would have nothing to say.
 */
let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('hand_off');
  s = ident(db.schema);
});
afterAll(() => db.close());

beforeEach(async () => {
  await db.pool.query(`TRUNCATE ${s}.support_reservations, ${s}.tenant_policies, ${s}.suppressions CASCADE`);
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
});

const lease = (over: Partial<HandOffLease> = {}): HandOffLease => ({ token: randomUUID(), leaseMs: 30_000, provider: 'sandbox', account: 'default', limit: 100, emailsPerPermit: 1, ...over });
const expire = (handOff: HandOffLease | null, notify: { channel: string } | null = null) => holdsExpireDueWithOutlook(db.pool, db.schema, 100, null, notify, null, handOff);
const tokens = async () => (await db.pool.query<{ tokens: number }>(`SELECT tokens FROM ${s}.rate_limiter WHERE name = 'default'`)).rows[0]!.tokens;
const outbox = async () =>
  (await db.pool.query<{ id: string; attempts: number; lease_token: string | null; account: string | null }>(`SELECT id, attempts, lease_token, account FROM ${s}.email_outbox ORDER BY id`)).rows;
const attempts = async () =>
  (await db.pool.query<{ intent_id: string; attempt: number; lease_token: string; provider: string; account: string; worker: number | null; started_at: Date }>(
    `SELECT intent_id, attempt, lease_token, provider, account, worker, started_at FROM ${s}.email_attempts ORDER BY intent_id`,
  )).rows;

/** The intents are pending, as without a hand-off: no lease, no attempt, no permit spent. */
async function expectCreatedPending(run: Awaited<ReturnType<typeof expire>>, count: number, tokensBefore: number): Promise<void> {
  expect(run.handed).toBeNull();
  expect(run.expired.filter((h) => h.intent_id !== null)).toHaveLength(count);
  expect((await outbox()).map((o) => [o.attempts, o.lease_token, o.account])).toEqual(Array.from({ length: count }, () => [0, null, null]));
  expect(await attempts()).toEqual([]);
  expect(await tokens()).toBeCloseTo(tokensBefore, 0);
}

describe('the expiry statement hands its intents off', () => {
  it('leases every intent of the batch to the token, opens their first attempts at the permits\' time and spends one permit each', async () => {
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'ho' });
    await db.pool.query(`UPDATE ${s}.support_reservations SET metadata = '{"slot":"10:30"}'`);
    const before = await tokens();
    const given = lease();
    const run = await expire(given);

    expect(run.expired).toHaveLength(3);
    const handed = run.handed!;
    expect(handed.intents.map((i) => [i.id, i.holdId, i.attempts, i.message, i.batchId, i.tenant])).toEqual(
      ['ho-0', 'ho-1', 'ho-2'].map((h) => [`reservation-expired:${h}`, h, 1, null, null, '']),
    );
    expect(handed.intents.map((i) => i.recipient)).toEqual(['customer+ho-0@example.com', 'customer+ho-1@example.com', 'customer+ho-2@example.com']);
    expect(handed.intents.every((i) => i.metadata?.['slot'] === '10:30' && i.suppression === null && !i.leaseWasExpired)).toBe(true);

    expect((await outbox()).map((o) => [o.attempts, o.lease_token, o.account])).toEqual(Array.from({ length: 3 }, () => [1, given.token, 'default']));
    const opened = await attempts();
    expect(opened.map((a) => [a.attempt, a.lease_token, a.provider, a.account, a.worker])).toEqual(Array.from({ length: 3 }, () => [1, given.token, 'sandbox', 'default', null]));
    // The attempts start when their permits were granted: the bucket's time, as a lease that takes its own permits does.
    expect(opened.every((a) => a.started_at.getTime() === new Date(handed.bucketTime).getTime())).toBe(true);
    expect(handed.intents.every((i) => i.leaseExpiresAt.getTime() === new Date(handed.bucketTime).getTime() + 30_000)).toBe(true);
    expect(before - (await tokens())).toBeGreaterThan(2.5);
    expect(before - (await tokens())).toBeLessThan(3.5);
  });

  it('sends no NOTIFY for intents it handed off, and one for those it did not', async () => {
    const channel = `hand_off_${randomUUID().slice(0, 8)}`;
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (n) => heard.push(n.channel));
      await listener.query(`LISTEN ${channel}`);
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'quiet' });
      expect((await expire(lease(), { channel })).handed?.intents).toHaveLength(2);
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'loud' });
      expect((await expire(lease({ limit: 1 }), { channel })).handed).toBeNull();
      await listener.query('SELECT 1');
      expect(heard).toEqual([channel]);
    } finally {
      await listener.end();
    }
  });

  it('names the worker on the attempts only while its presence lock is held', async () => {
    const session = new pg.Client({ connectionString: db.url });
    await session.connect();
    try {
      const presence = new Presence(db.schema, silentLogger);
      await presence.acquire(session);
      await insertDueHolds(db.pool, db.schema, 1, { prefix: 'owned' });
      await expire(lease({ owner: presence.owner }));
      await insertDueHolds(db.pool, db.schema, 1, { prefix: 'unowned' });
      // An id whose lock nobody holds: a worker cut off from its session.
      await expire(lease({ owner: presence.owner! + 1 }));
      expect((await attempts()).map((a) => [a.intent_id, a.worker])).toEqual([
        ['reservation-expired:owned-0', presence.owner],
        ['reservation-expired:unowned-0', null],
      ]);
    } finally {
      await session.end();
    }
  });

  it('costs a permit per request where a permit is a request of batches, and counts every email against the quota', async () => {
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'batched' });
    const quotaUsed = async () => (await db.pool.query<{ quota_used: number }>(`SELECT quota_used FROM ${s}.rate_limiter WHERE name = 'default'`)).rows[0]!.quota_used;
    const [before, usedBefore] = [await tokens(), await quotaUsed()];
    expect((await expire(lease({ emailsPerPermit: 100 }))).handed?.intents).toHaveLength(3);
    expect(before - (await tokens())).toBeGreaterThan(0.5);
    expect(before - (await tokens())).toBeLessThan(1.5);
    expect((await quotaUsed()) - usedBefore).toBe(3);
  });

  it('brings each recipient\'s suppression, as the lease does', async () => {
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'su' });
    await suppressionsAdd(db.pool, db.schema, [{ address: 'customer+su-1@example.com', reason: 'hard_bounce', detail: null, provider: 'sandbox' }]);
    const handed = (await expire(lease())).handed!;
    expect(handed.intents.map((i) => i.suppression?.reason ?? null)).toEqual([null, 'hard_bounce']);
  });
});

describe('the expiry statement leases none, creating the intents pending', () => {
  it('when the permits do not cover the whole batch', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 0.001, burst: 2 });
    await db.pool.query(`UPDATE ${s}.rate_limiter SET tokens = 2`);
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'short' });
    await expectCreatedPending(await expire(lease()), 3, 2);
  });

  it('while delivery is paused', async () => {
    await deliveryPause(db.pool, db.schema, { reason: 'test', by: 'test' });
    try {
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'paused' });
      await expectCreatedPending(await expire(lease()), 2, await tokens());
    } finally {
      await deliveryResume(db.pool, db.schema);
    }
  });

  it('when older email is due and unleased: it goes first, through the fair lease', async () => {
    await insertDueHolds(db.pool, db.schema, 1, { prefix: 'older', pastSeconds: 60 });
    await expire(null);
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'newer' });
    const run = await expire(lease());
    expect(run.handed).toBeNull();
    expect((await outbox()).every((o) => o.lease_token === null)).toBe(true);
  });

  it('(but it hands off beside older email the lease would not take: a paused tenant\'s)', async () => {
    await insertDueHolds(db.pool, db.schema, 1, { prefix: 'parked', pastSeconds: 60 });
    await db.pool.query(`UPDATE ${s}.support_reservations SET tenant = 'parked' WHERE id = 'parked-0'`);
    await tenantPause(db.pool, db.schema, 'parked', 'test');
    await expire(null);
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'fresh' });
    expect((await expire(lease())).handed?.intents.map((i) => i.holdId)).toEqual(['fresh-0', 'fresh-1']);
  });

  it('when a tenant of the batch has a policy (here a pause)', async () => {
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'tenant' });
    await db.pool.query(`UPDATE ${s}.support_reservations SET tenant = 'acme' WHERE id = 'tenant-1'`);
    await tenantPause(db.pool, db.schema, 'acme', 'test');
    await expectCreatedPending(await expire(lease()), 2, await tokens());
  });

  it('when the day\'s quota has no room for every email, though one permit would carry them all', async () => {
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'quota' });
    await expectCreatedPending(await expire(lease({ emailsPerPermit: 100, dailyQuota: 2 })), 3, await tokens());
  });

  it('when the batch has more intents than the worker asked for', async () => {
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'big' });
    await expectCreatedPending(await expire(lease({ limit: 2 })), 3, await tokens());
  });
});
