import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { MAX_ROUNDS_IN_FLIGHT } from '../../src/model/delivery-policy.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { ident } from '../../src/db/pool.js';
import type { SendResult } from '../../src/providers/gateway.js';
import { silentLogger } from '../../src/observability/logger.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countBy, insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('rounds');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1_000_000, burst: 1_000_000 });
});
afterAll(() => db.close());

/** A provider that answers only when the test lets it, counting the sends it holds. */
class GatedGateway extends ScriptedGateway {
  inFlight = 0;
  maxInFlight = 0;
  private readonly waiting: Array<() => void> = [];
  constructor() {
    super(() => this.gate());
  }
  private gate(): Promise<SendResult> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return new Promise((resolve) =>
      this.waiting.push(() => {
        this.inFlight--;
        resolve({ kind: 'accepted', receipt: 'r' });
      }),
    );
  }
  get held(): number {
    return this.waiting.length;
  }
  openOne(): void {
    this.waiting.shift()?.();
  }
  openAll(): void {
    while (this.waiting.length > 0) this.openOne();
  }
}

const until = async (check: () => boolean | Promise<boolean>, what: string) => {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('rounds in flight', () => {
  it('with concurrency above the batch, rounds overlap and their sends together never exceed concurrency', async () => {
    await insertDueHolds(db.pool, db.schema, 40, { prefix: 'ov' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const gateway = new GatedGateway();
    const worker = new DeliveryWorker({
      pool: db.pool,
      schema: db.schema,
      gateway,
      batchSize: 4,
      concurrency: 10,
      pollIntervalMs: 20,
      from: 'Support <support@leasehold.test>',
      logger: silentLogger,
    });
    worker.start();
    try {
      // Three rounds (4 + 4 + the 2 slots left) lease at once: ten sends wait on the provider, no more.
      await until(() => gateway.held === 10, 'ten sends in flight');
      await new Promise((r) => setTimeout(r, 100));
      expect(gateway.held).toBe(10);
      const leased = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE state = 'pending' AND lease_token IS NOT NULL`,
      );
      expect(leased.rows[0]!.n).toBe(10);
      // Once one round's sends are answered it records and leases again,
      // while the other rounds still wait on the provider: at most one
      // round's worth (4) of answers is needed before a new send starts.
      let opened = 0;
      while (gateway.calls.length === 10) {
        gateway.openOne();
        opened++;
        const deadline = Date.now() + 300;
        while (gateway.calls.length === 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      }
      expect(opened).toBeLessThanOrEqual(4);
      expect(gateway.held).toBeGreaterThan(10 - opened);
      // Let everything through.
      const drain = setInterval(() => gateway.openAll(), 5);
      try {
        await until(async () => (await countBy(db.pool, db.schema, 'email_outbox', 'state'))['sent'] === 40, 'all 40 sent');
      } finally {
        clearInterval(drain);
      }
      expect(gateway.maxInFlight).toBe(10);
      expect(gateway.calls).toHaveLength(40);
    } finally {
      gateway.openAll();
      await worker.stop();
    }
  });

  it('stop() waits for every round in flight to record', async () => {
    await insertDueHolds(db.pool, db.schema, 6, { prefix: 'st' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const gateway = new GatedGateway();
    const worker = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, batchSize: 3, concurrency: 6, logger: silentLogger });
    worker.start();
    await until(() => gateway.held === 6, 'both rounds sending');
    let stopped = false;
    const stopping = worker.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(stopped).toBe(false);
    gateway.openAll();
    await stopping;
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE reservation_id LIKE 'st%' AND state = 'sent'`,
    );
    expect(rows[0]!.n).toBe(6);
  });

  it('a round waiting for a send slot when stop() is called leases nothing once the slot frees', async () => {
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'sw' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const gateway = new GatedGateway();
    const worker = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, batchSize: 1, concurrency: 2, logger: silentLogger });
    const first = worker.runOnce();
    const second = worker.runOnce();
    await until(() => gateway.held === 2, 'both slots sending');
    // No slot is free: this round waits for one of the sends to end.
    const third = worker.runOnce();
    await worker.stop();
    // Should the third round lease after all, its send is let through too, so the test ends either way.
    const drain = setInterval(() => gateway.openAll(), 5);
    try {
      await Promise.all([first, second]);
      const waited = await third;
      expect(waited).toMatchObject({ leased: 0, permits: 0, blocked: 'stopping' });
    } finally {
      clearInterval(drain);
    }
    expect(gateway.calls).toHaveLength(2);
    const { rows } = await db.pool.query<{ state: string; attempts: number; n: number }>(
      `SELECT state, attempts, count(*)::int AS n FROM ${ident(db.schema)}.email_outbox
        WHERE reservation_id LIKE 'sw%' GROUP BY state, attempts ORDER BY state`,
    );
    // Two sent; the third never leased (no attempt, no lease), left for the next worker.
    expect(rows).toEqual([
      { state: 'pending', attempts: 0, n: 1 },
      { state: 'sent', attempts: 1, n: 2 },
    ]);
  });

  it(`runs at most ${MAX_ROUNDS_IN_FLIGHT} rounds side by side, however high concurrency is`, async () => {
    await insertDueHolds(db.pool, db.schema, 20, { prefix: 'mx' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const gateway = new GatedGateway();
    const worker = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, batchSize: 1, concurrency: 100, pollIntervalMs: 20, logger: silentLogger });
    worker.start();
    try {
      await until(() => gateway.held === MAX_ROUNDS_IN_FLIGHT, `${MAX_ROUNDS_IN_FLIGHT} sends in flight`);
      await new Promise((r) => setTimeout(r, 100));
      expect(gateway.held).toBe(MAX_ROUNDS_IN_FLIGHT);
    } finally {
      const drain = setInterval(() => gateway.openAll(), 5);
      await until(async () => (await countBy(db.pool, db.schema, 'email_outbox', 'state'))['pending'] === undefined, 'drained').finally(() =>
        clearInterval(drain),
      );
      await worker.stop();
    }
  });
});

describe('permits a round does not use', () => {
  it('go back in the lease statement itself: one due intent and five permits leave four in the bucket', async () => {
    const { rateLimiterGet } = await import('../../src/tables/rate-limiter.js');
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET state = 'dead', finished_at = now() WHERE state = 'pending'`);
    // A full bucket of 10 that refills too slowly to matter here.
    await rateLimiterSet(db.pool, db.schema, { perSecond: 0.001, burst: 10 });
    await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET tokens = 10`);
    await insertDueHolds(db.pool, db.schema, 1, { prefix: 'pm' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const statements: string[] = [];
    const pool = new Proxy(db.pool, {
      get(target, key, receiver) {
        if (key !== 'query') return Reflect.get(target, key, receiver);
        return (text: string | { text: string }, ...rest: unknown[]) => {
          statements.push(typeof text === 'string' ? text : text.text);
          return (target.query as (...a: unknown[]) => unknown).call(target, text, ...rest);
        };
      },
    });
    const worker = new DeliveryWorker({ pool, schema: db.schema, gateway: new ScriptedGateway(), batchSize: 5, logger: silentLogger });
    const run = await worker.runOnce();
    expect(run).toMatchObject({ permits: 5, leased: 1, outcomes: { accepted: 1 } });
    const tokens = (await rateLimiterGet(db.pool, db.schema))!.tokens;
    expect(tokens).toBeGreaterThanOrEqual(9);
    expect(tokens).toBeLessThan(9.01);
    // No statement of its own for the refund.
    expect(statements.filter((q) => /^\s*UPDATE\b[^;]*rate_limiter/.test(q))).toEqual([]);
    // Nor for the take: one account, a permit an email, one tenant: the lease statement took the permits
    // (every statement on the limiter is the lease's, but the worker's one-time write of its initial policy).
    const limiterOnly = statements.filter((q) => /rate_limiter/.test(q) && !/email_outbox/.test(q));
    expect(limiterOnly.every((q) => /^\s*INSERT\b/.test(q)), limiterOnly.join('\n---\n')).toBe(true);
    expect(statements.filter((q) => /email_outbox/.test(q) && /FOR UPDATE/.test(q) && /rate_limiter/.test(q))).toHaveLength(1);
    // A round that finds nothing gives all five back.
    expect(await worker.runOnce()).toMatchObject({ permits: 5, leased: 0, blocked: 'idle' });
    expect((await rateLimiterGet(db.pool, db.schema))!.tokens).toBeGreaterThanOrEqual(9);
  });
});
