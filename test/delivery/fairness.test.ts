import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ident, withClient } from '../../src/db/pool.js';
import { intentsLease, intentsLeaseOneTenant, intentsLeaseOneTenantTaking } from '../../src/tables/outbox.js';
import { rateLimiterCooldown, rateLimiterPause, rateLimiterResume, rateLimiterSet, rateLimiterTake } from '../../src/tables/rate-limiter.js';
import { LimiterMissingError } from '../../src/errors.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { planOf } from '../helpers/plans.js';

/**
 * The fair lease (tables/outbox/lane.ts fairNextSql): a round shares its
 * intents among the tenants with due intents, in the lease statement, so
 * the rule holds for every worker process alike.
 */
let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('fairness');
  s = ident(db.schema);
});
afterAll(() => db.close());

beforeEach(async () => {
  await db.pool.query(
    `UPDATE ${s}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`,
  );
});

let seq = 0;
/** `count` pending intents of `tenant`, due `dueInS` seconds from now (negative: overdue), with their holds. */
async function intents(tenant: string, count: number, dueInS = -1): Promise<string[]> {
  const prefix = `${tenant || 'none'}-${++seq}`;
  const { rows } = await db.pool.query<{ id: string }>(
    `WITH h AS (
       INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash, tenant)
       SELECT $1 || '-' || i, 'c@example.com', now() + make_interval(secs => $3), 'expired', now() + make_interval(secs => $3), 'x', $2
         FROM generate_series(1, $4) i RETURNING id, expires_at)
     INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, tenant)
     SELECT 'reservation-expired:' || h.id, h.id, 'c@example.com', 'reservation-expired', 'pending', h.expires_at, h.expires_at, $2 FROM h
     RETURNING id`,
    [prefix, tenant, dueInS, count],
  );
  return rows.map((r) => r.id);
}

const lease = (limit: number, tenantStart?: string) =>
  intentsLease(db.pool, db.schema, {
    limit,
    leaseMs: 30_000,
    token: randomUUID(),
    provider: 'x',
    now: null,
    ...(tenantStart !== undefined ? { tenantStart } : {}),
  });

const tenantsOf = async (ids: string[]) => {
  const { rows } = await db.pool.query<{ tenant: string; n: number }>(
    `SELECT tenant, count(*)::int AS n FROM ${s}.email_outbox WHERE id = ANY ($1) GROUP BY 1 ORDER BY 1`,
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.tenant, r.n]));
};

describe('fair lease', () => {
  it("one tenant's email goes in the next round beside another's backlog of thousands, older though that backlog is", async () => {
    await intents('a', 2000, -60);
    const b = await intents('b', 20, -1);
    const round = await lease(50);
    expect(round).toHaveLength(50);
    // b's twenty (all it has) and a's thirty: b did not wait behind a's 2,000 older ones.
    expect(await tenantsOf(round.map((i) => i.id))).toEqual({ a: 30, b: 20 });
    expect(round.filter((i) => b.includes(i.id))).toHaveLength(20);
  });

  it('a tenant alone gets the whole round; with others it gets the rest of what their shares leave', async () => {
    await intents('a', 300);
    expect(await lease(50)).toHaveLength(50);
    await intents('b', 3);
    await intents('c', 1);
    const round = await lease(60);
    expect(await tenantsOf(round.map((i) => i.id))).toEqual({ a: 56, b: 3, c: 1 });
  });

  it('shares are even while every tenant has more than its share', async () => {
    for (const t of ['a', 'b', 'c', 'd']) await intents(t, 100);
    const round = await lease(40);
    expect(await tenantsOf(round.map((i) => i.id))).toEqual({ a: 10, b: 10, c: 10, d: 10 });
  });

  it("a tenant's weight is its share: weight 3 takes three intents for every one of weight 1", async () => {
    await db.pool.query(`INSERT INTO ${s}.tenant_policies (tenant, weight) VALUES ('heavy', 3) ON CONFLICT (tenant) DO UPDATE SET weight = 3`);
    await intents('heavy', 100);
    await intents('light', 100);
    const round = await lease(40);
    expect(await tenantsOf(round.map((i) => i.id))).toEqual({ heavy: 30, light: 10 });
    await db.pool.query(`DELETE FROM ${s}.tenant_policies WHERE tenant = 'heavy'`);
  });

  it("a capped tenant takes no more than its bucket; the others are not held back by it", async () => {
    await db.pool.query(
      `INSERT INTO ${s}.tenant_policies (tenant, per_second, burst, tokens, refilled_at) VALUES ('capped', 0.001, 2, 2, now())
       ON CONFLICT (tenant) DO UPDATE SET per_second = 0.001, burst = 2, tokens = 2, refilled_at = now()`,
    );
    await intents('capped', 10, -60);
    await intents('free', 10);
    expect(await tenantsOf((await lease(20)).map((i) => i.id))).toEqual({ capped: 2, free: 10 });
    // Its bucket is spent: the next rounds take none of its intents, oldest though they are.
    await intents('free', 5);
    expect(await tenantsOf((await lease(20)).map((i) => i.id))).toEqual({ free: 5 });
    const { rows } = await db.pool.query(`SELECT tokens FROM ${s}.tenant_policies WHERE tenant = 'capped'`);
    expect(rows[0].tokens).toBeLessThan(1);
    await db.pool.query(`DELETE FROM ${s}.tenant_policies WHERE tenant = 'capped'`);
  });

  it('the walk starts anywhere and wraps around: every tenant is reached whatever the start', async () => {
    for (const t of ['', 'm', 'z']) await intents(t, 5);
    for (const start of ['A', 'n', 'zz', '0']) {
      const round = await lease(3, start);
      expect(Object.keys(await tenantsOf(round.map((i) => i.id))).sort(), start).toEqual(['', 'm', 'z']);
      await db.pool.query(`UPDATE ${s}.email_outbox SET lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`);
    }
  });

  it('intents not yet due, or under a live lease, are not taken for any tenant', async () => {
    await intents('a', 5, 3600);
    const b = await intents('b', 2);
    const first = await lease(10);
    expect(first.map((i) => i.id).sort()).toEqual([...b].sort());
    expect(await lease(10)).toEqual([]);
  });

  it('a round smaller than the tenants due spreads over them, and at one permit a round each tenant is first about as often', async () => {
    const tenants = Array.from({ length: 30 }, (_, i) => `t${String(i).padStart(2, '0')}`);
    for (const t of tenants) await intents(t, 2);
    const round = await lease(10);
    expect(Object.values(await tenantsOf(round.map((i) => i.id)))).toEqual(Array(10).fill(1));
    await db.pool.query(`UPDATE ${s}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`);

    // A low rate: one permit a round. b's single email is not kept behind a's older hundred.
    await intents('a', 100, -60);
    const [b] = await intents('b', 1);
    let bFirst = 0;
    for (let i = 0; i < 200; i++) {
      const [one] = await lease(1);
      if (one!.id === b) bFirst++;
      await db.pool.query(`UPDATE ${s}.email_outbox SET lease_token = NULL, lease_expires_at = NULL WHERE id = $1`, [one!.id]);
    }
    expect(bFirst).toBeGreaterThan(50);
    expect(bFirst).toBeLessThan(150);
  });
});

describe('the one-tenant form of the lease (intentsLeaseOneTenant)', () => {
  const one = (limit: number, permits?: { granted: number; bucketTime: string }) =>
    intentsLeaseOneTenant(db.pool, db.schema, { limit, leaseMs: 30_000, token: randomUUID(), provider: 'x', now: null, ...(permits ? { permits } : {}) });
  const leasedNow = async () =>
    (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE state = 'pending' AND lease_token IS NOT NULL`)).rows[0]!.n;
  const tokens = async () => (await db.pool.query<{ tokens: number }>(`SELECT tokens FROM ${s}.rate_limiter WHERE name = 'default'`)).rows[0]!.tokens;

  it("takes what the fair lease would: the one tenant's oldest leasable intents, not those not yet due or under a live lease", async () => {
    const older = await intents('solo', 30, -120);
    const newer = await intents('solo', 30, -60);
    await intents('solo', 5, 3600);
    // A statement's rows share one now(): give the newer ones an order of their own, so "the oldest five" is one answer.
    await db.pool.query(
      `UPDATE ${s}.email_outbox o SET available_at = o.available_at + make_interval(secs => n.i / 1000.0)
         FROM unnest($1::text[]) WITH ORDINALITY AS n(id, i) WHERE o.id = n.id`,
      [newer],
    );
    await db.pool.query(`UPDATE ${s}.email_outbox SET lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute' WHERE id = ANY ($1)`, [older.slice(0, 10)]);
    const round = await one(25);
    expect(round).not.toBeNull();
    expect(round!.map((i) => i.id).sort()).toEqual([...older.slice(10), ...newer.slice(0, 5)].sort());
    // And the fair lease, on the same state, would have taken those.
    await db.pool.query(`UPDATE ${s}.email_outbox SET lease_token = NULL, lease_expires_at = NULL WHERE id = ANY ($1)`, [round!.map((i) => i.id)]);
    expect((await lease(25)).map((i) => i.id).sort()).toEqual(round!.map((i) => i.id).sort());
  });

  it('leases nothing and gives back no permit when another tenant has pending email, even none due: the fair lease decides', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 0.001, burst: 20 });
    await intents('a', 10);
    await intents('b', 1, 3600);
    const take = await rateLimiterTake(db.pool, db.schema, 20);
    expect(take.granted).toBe(20);
    const before = await tokens();
    expect(await one(20, { granted: 20, bucketTime: take.bucketTime })).toBeNull();
    expect(await leasedNow()).toBe(0);
    expect(await tokens()).toBeCloseTo(before, 3);
    // The fair lease on the same take spends ten and gives the other ten back.
    expect(await lease(20)).toHaveLength(10);
  });

  it('leases nothing when the one tenant has a policy (a weight, cap, pause, route or sender)', async () => {
    await db.pool.query(`INSERT INTO ${s}.tenant_policies (tenant, weight) VALUES ('solo-policy', 2) ON CONFLICT (tenant) DO UPDATE SET weight = 2`);
    await intents('solo-policy', 5);
    expect(await one(10)).toBeNull();
    expect(await leasedNow()).toBe(0);
    await db.pool.query(`DELETE FROM ${s}.tenant_policies WHERE tenant = 'solo-policy'`);
    expect(await one(10)).toHaveLength(5);
  });

  it('answers an empty round, not null, when nothing is pending at all', async () => {
    expect(await one(10)).toEqual([]);
  });
});

describe('the one-tenant lease that takes its own permits (intentsLeaseOneTenantTaking)', () => {
  const taking = (limit: number, extra: { dailyQuota?: number; account?: string } = {}) =>
    intentsLeaseOneTenantTaking(db.pool, db.schema, { limit, leaseMs: 30_000, token: randomUUID(), provider: 'x', now: null, ...extra });
  const limiter = async () =>
    (await db.pool.query<{ tokens: number; quota_used: number; refilled_at: string }>(`SELECT tokens, quota_used, refilled_at::text FROM ${s}.rate_limiter WHERE name = 'default'`)).rows[0]!;
  const attemptsStarted = async (ids: string[]) =>
    (await db.pool.query<{ started: string }>(`SELECT DISTINCT started_at::text AS started FROM ${s}.email_attempts WHERE intent_id = ANY ($1)`, [ids])).rows.map((r) => r.started);

  beforeEach(async () => {
    // A bucket of 20 that refills too slowly to matter here; no quota used.
    await rateLimiterSet(db.pool, db.schema, { perSecond: 0.001, burst: 20 });
    await db.pool.query(`UPDATE ${s}.rate_limiter SET tokens = 20, quota_used = 0 WHERE name = 'default'`);
  });

  it('grants as a take would, leases what is due within the grant, and spends one permit per leased intent in the same write', async () => {
    const ids = await intents('solo', 3);
    const { grant, intents: leased } = await taking(10);
    expect(grant).toMatchObject({ granted: 10, paused: false, coolingDown: false });
    expect(leased!.map((i) => i.id).sort()).toEqual([...ids].sort());
    const after = await limiter();
    // 20 - 3: the seven granted and not leased stay in the bucket; the bucket's time is the grant's.
    expect(after.tokens).toBeGreaterThanOrEqual(17);
    expect(after.tokens).toBeLessThan(17.01);
    expect(after.quota_used).toBe(3);
    expect(after.refilled_at).toBe(grant.bucketTime);
    // The attempts start when the permits were granted, as after a take.
    expect(await attemptsStarted(ids)).toEqual([grant.bucketTime]);
  });

  it('leases no more than the bucket grants, and answers when to ask again', async () => {
    await db.pool.query(`UPDATE ${s}.rate_limiter SET tokens = 2 WHERE name = 'default'`);
    await intents('solo', 5);
    const { grant, intents: leased } = await taking(5);
    expect(grant.granted).toBe(2);
    expect(leased).toHaveLength(2);
    expect(grant.retryInMs).toBeGreaterThan(0);
    expect((await limiter()).tokens).toBeLessThan(0.01);
  });

  it('grants nothing and leases nothing while the account is paused, and counts its daily quota like a take', async () => {
    await intents('solo', 5);
    await rateLimiterPause(db.pool, db.schema, 'default', { reason: 'test', by: 'test' });
    try {
      const paused = await taking(5);
      expect(paused.grant).toMatchObject({ granted: 0, paused: true, retryInMs: 1000 });
      expect(paused.intents).toEqual([]);
    } finally {
      await rateLimiterResume(db.pool, db.schema, 'default');
    }
    const quota = await taking(5, { dailyQuota: 2 });
    expect(quota.grant).toMatchObject({ granted: 2, quotaSpent: true, quotaLeft: 2 });
    expect(quota.intents).toHaveLength(2);
  });

  it('with another tenant pending, leases nothing and keeps the whole grant for the fair lease that follows', async () => {
    await intents('a', 10);
    await intents('b', 1, 3600);
    const { grant, intents: leased } = await taking(20);
    expect(leased).toBeNull();
    expect(grant.granted).toBe(20);
    expect((await limiter()).tokens).toBeLessThan(0.01);
    // The fair lease on that grant spends ten and gives the other ten back.
    expect(await intentsLease(db.pool, db.schema, { limit: 20, leaseMs: 30_000, token: randomUUID(), provider: 'x', now: null, permits: { granted: 20, bucketTime: grant.bucketTime } })).toHaveLength(10);
    expect((await limiter()).tokens).toBeGreaterThanOrEqual(10);
  });

  it('names the account whose limiter row is missing, and leases nothing on it', async () => {
    const ids = await intents('solo', 3);
    await expect(taking(5, { account: 'nowhere' })).rejects.toBeInstanceOf(LimiterMissingError);
    // Also with the caller's clock, which the lease would otherwise use: no grant, no lease.
    const now = (await db.pool.query<{ now: Date }>('SELECT now() + interval \'1 second\' AS now')).rows[0]!.now;
    await expect(
      intentsLeaseOneTenantTaking(db.pool, db.schema, { limit: 5, leaseMs: 30_000, token: randomUUID(), provider: 'x', account: 'nowhere', now }),
    ).rejects.toBeInstanceOf(LimiterMissingError);
    const { rows } = await db.pool.query<{ leased: number; attempts: number }>(
      `SELECT count(*) FILTER (WHERE lease_token IS NOT NULL)::int AS leased, coalesce(sum(attempts), 0)::int AS attempts FROM ${s}.email_outbox WHERE id = ANY ($1)`,
      [ids],
    );
    expect(rows[0]).toEqual({ leased: 0, attempts: 0 });
  });

  it('grants nothing and leases nothing while the account cools down after a 429', async () => {
    await intents('solo', 3);
    await rateLimiterCooldown(db.pool, db.schema, 5_000);
    const { grant, intents: leased } = await taking(5);
    expect(grant).toMatchObject({ granted: 0, coolingDown: true });
    expect(grant.retryInMs).toBeGreaterThan(4_000);
    expect(leased).toEqual([]);
  });
});

describe('fair lease at scale', () => {
  it('stays index scans at 1,000,000 pending intents over 10,000 tenants', async () => {
    await withClient(db.pool, async (client) => {
      await client.query('BEGIN');
      // A million foreign-key checks are most of the seeding's time, and
      // these rows satisfy them by construction: skip them (and the count
      // triggers, which nothing here reads) where the role may, as the
      // embedded server's superuser may; check them elsewhere.
      await client.query(`SET LOCAL session_replication_role = replica`).catch(() => client.query('ROLLBACK').then(() => client.query('BEGIN')));
      // Built once after the load (a sorted build) rather than kept up row by
      // row: the same indexes, by their own definitions, in a third of the time.
      const { rows: indexes } = await client.query<{ name: string; def: string }>(
        `SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
          WHERE i.schemaname = $1 AND i.tablename IN ('email_outbox', 'support_reservations')
            AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname AND c.connamespace = $1::regnamespace)`,
        [db.schema],
      );
      for (const index of indexes) await client.query(`DROP INDEX ${s}.${ident(index.name)}`);
      await client.query(
        `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash, tenant)
         SELECT 'big-' || i, 'c@example.com', now() - interval '1 minute', 'expired', now() - interval '1 minute', 'x', 'tenant-' || (i % 10000)
           FROM generate_series(1, 1000000) i`,
      );
      await client.query(
        `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, tenant)
         SELECT 'reservation-expired:big-' || i, 'big-' || i, 'c@example.com', 'reservation-expired', 'pending',
                now() - make_interval(secs => i % 600), now() - interval '1 minute', 'tenant-' || (i % 10000)
           FROM generate_series(1, 1000000) i`,
      );
      for (const index of indexes) await client.query(index.def);
      await client.query('COMMIT');
    });
    await db.pool.query(`ANALYZE ${s}.email_outbox`);
    const plan = await planOf(db.pool, (q) =>
      intentsLease(q, db.schema, { limit: 50, leaseMs: 30_000, token: randomUUID(), provider: 'x', now: null, tenantStart: 'tenant-5' }),
    );
    // The walk and the shares go through the tenant index, the fill through the due index; nothing scans the outbox.
    expect(plan, plan).toContain('email_outbox_tenant_due');
    expect(plan, plan).toContain('email_outbox_available');
    expect(plan, plan).not.toMatch(/Seq Scan on email_outbox/);
    const round = await lease(50, 'tenant-5');
    expect(round).toHaveLength(50);
    // 50 tenants walked, one intent each.
    expect(Object.keys(await tenantsOf(round.map((i) => i.id)))).toHaveLength(50);
    console.log(`EXPLAIN of the fair lease at 1,000,000 pending intents over 10,000 tenants:\n${plan}`);
    // The one-tenant form finds the other tenants from the tenant index's two ends and reads nothing else.
    const onePlan = await planOf(db.pool, (q) => intentsLeaseOneTenant(q, db.schema, { limit: 50, leaseMs: 30_000, token: randomUUID(), provider: 'x', now: null }));
    expect(onePlan, onePlan).toContain('email_outbox_tenant_due');
    expect(onePlan, onePlan).not.toMatch(/Seq Scan on email_outbox/);
    expect(await intentsLeaseOneTenant(db.pool, db.schema, { limit: 50, leaseMs: 30_000, token: randomUUID(), provider: 'x', now: null })).toBeNull();
  }, 180_000);
});
