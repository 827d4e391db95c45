import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { Writable } from 'node:stream';
import { ManualClock } from '../../src/runtime/clock.js';
import { createPool, ident, withClient } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countBy, insertDueHolds } from '../helpers/holds.js';
import { intentsChannel } from '../../src/db/listener.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('expiry');
});
afterAll(() => db.close());

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('expiry worker', () => {
  it('expires in batches with one statement each and loops while batches are full', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    await insertDueHolds(db.pool, db.schema, 25, { prefix: 'batch' });
    const metrics = createMetrics();
    const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 10, metrics });
    const runs = [await worker.runOnce(), await worker.runOnce(), await worker.runOnce(), await worker.runOnce()];
    expect(runs.map((r) => r.expired.length)).toEqual([10, 10, 5, 0]);
    expect(runs.map((r) => r.full)).toEqual([true, true, false, false]);
    expect((await metrics.holdsExpired.get()).values[0]?.value).toBe(25);
  });

  it('logs one holds.expired event per batch at info, and each hold and intent at debug', async () => {
    const lines = async (level: 'info' | 'debug') => {
      await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
      await insertDueHolds(db.pool, db.schema, 12, { prefix: `log-${level}` });
      const out: string[] = [];
      const destination = new Writable({ write: (chunk: Buffer, _e, done) => (out.push(...chunk.toString().split('\n').filter(Boolean)), done()) });
      const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 5, logger: createLogger({ level, destination }) });
      while ((await worker.runOnce()).expired.length > 0);
      await new Promise((r) => setImmediate(r));
      return out.map((l) => JSON.parse(l) as { event: string; holds?: number; intents?: number; latestMs?: number; holdId?: string });
    };
    const info = await lines('info');
    expect(info.map((e) => e.event)).toEqual(['holds.expired', 'holds.expired', 'holds.expired']);
    expect(info.map((e) => [e.holds, e.intents])).toEqual([[5, 5], [5, 5], [2, 2]]);
    expect(info.every((e) => typeof e.latestMs === 'number' && e.latestMs >= 0)).toBe(true);
    const debug = await lines('debug');
    expect(debug.filter((e) => e.event === 'hold.expired')).toHaveLength(12);
    expect(debug.filter((e) => e.event === 'intent.created')).toHaveLength(12);
    expect(debug.filter((e) => e.event === 'holds.expired')).toHaveLength(3);
  });

  it('tells onIntentsCommitted once a batch with intents has committed; never for an empty batch or one rolled back', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'told' });
    // What another connection sees at the moment of each call: the batch's intents, committed.
    const seen: Array<Promise<number>> = [];
    const countIntents = async () =>
      (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE reservation_id LIKE 'told-%'`)).rows[0]!.n;
    const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 10, onIntentsCommitted: () => void seen.push(countIntents()) });
    expect((await worker.runOnce()).expired).toHaveLength(3);
    expect(await Promise.all(seen)).toEqual([3]);
    expect((await worker.runOnce()).expired).toHaveLength(0);
    expect(seen).toHaveLength(1);

    // A batch that fails before its commit tells nothing, and its holds stay held.
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'rolled' });
    const crashing = new ExpiryWorker({
      pool: db.pool,
      schema: db.schema,
      onIntentsCommitted: () => void seen.push(countIntents()),
      faults: { at: async (point: string) => { if (point === 'expiry.locked') throw new Error('crash before commit'); } } as never,
    });
    await expect(crashing.runOnce()).rejects.toThrow('crash before commit');
    expect(seen).toHaveLength(1);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.support_reservations WHERE id LIKE 'rolled-%' AND status = 'held'`)).rows[0].n).toBe(2);

    // A callback that throws is logged; the batch stands.
    const out: string[] = [];
    const destination = new Writable({ write: (chunk: Buffer, _e, done) => (out.push(chunk.toString()), done()) });
    const throwing = new ExpiryWorker({
      pool: db.pool,
      schema: db.schema,
      logger: createLogger({ level: 'warn', destination }),
      onIntentsCommitted: () => {
        throw new Error('wake failed');
      },
    });
    expect((await throwing.runOnce()).expired).toHaveLength(2);
    await new Promise((r) => setImmediate(r));
    expect(out.some((l) => l.includes('"event":"expiry.intents_committed_failed"') && l.includes('wake failed'))).toBe(true);
  });

  it("announces a batch's intents by NOTIFY at commit, with notifyPayload (default ''), also in a transaction with a hook", async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    const payloads: string[] = [];
    await withClient(db.pool, async (listener) => {
      listener.on('notification', (m) => void payloads.push(m.payload ?? ''));
      await listener.query(`LISTEN ${ident(intentsChannel(db.schema))}`);
      const arrived = (n: number) => waitFor(async () => payloads.length >= n, `${n} notifications`);
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'said' });
      expect((await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce()).expired).toHaveLength(2);
      await arrived(1);
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'named' });
      expect((await new ExpiryWorker({ pool: db.pool, schema: db.schema, notifyPayload: 'process:me' }).runOnce()).expired).toHaveLength(2);
      await arrived(2);
      await insertDueHolds(db.pool, db.schema, 1, { prefix: 'hooked' });
      const hooked = new ExpiryWorker({ pool: db.pool, schema: db.schema, notifyPayload: 'process:me', onExpired: async () => {} });
      expect((await hooked.runOnce()).expired).toHaveLength(1);
      await arrived(3);
      // A batch that expired nothing announces nothing.
      expect((await hooked.runOnce()).expired).toHaveLength(0);
      await new Promise((r) => setTimeout(r, 100));
      await listener.query(`UNLISTEN *`);
    });
    expect(payloads).toEqual(['', 'process:me', 'process:me']);
  });

  it('refuses a notifyPayload that is not a string or looks like a test notification, naming it', () => {
    expect(() => new ExpiryWorker({ pool: db.pool, schema: db.schema, notifyPayload: 7 as never })).toThrow(/notifyPayload/);
    // A listener takes a probe: payload for its own test notification, never a wake-up.
    expect(() => new ExpiryWorker({ pool: db.pool, schema: db.schema, notifyPayload: 'probe:x' })).toThrow(/notifyPayload.*must not start with probe:/);
  });

  it('refuses a handOff that is not a delivery worker, naming it', () => {
    expect(() => new ExpiryWorker({ pool: db.pool, schema: db.schema, handOff: {} as never })).toThrow(/handOff.*must have a handOff\(\) method/);
  });

  it('refuses an onIntentsCommitted that is not a function, naming it', () => {
    expect(() => new ExpiryWorker({ pool: db.pool, schema: db.schema, onIntentsCommitted: 'wake' as never })).toThrow(/onIntentsCommitted.*must be a function/);
  });

  it('expires in deadline order with one captured now per batch', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    const clock = new ManualClock('2030-06-01T00:00:00Z');
    for (const [id, ttl] of [['late', 300], ['early', 100], ['middle', 200]] as const) {
      await createHold(db.pool, { id, customerEmail: `${id}@example.com`, ttlSeconds: ttl }, { schema: db.schema, clock });
    }
    clock.advance(250_000);
    const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 1, clock });
    expect((await worker.runOnce()).expired.map((h) => h.id)).toEqual(['early']);
    const second = (await worker.runOnce()).expired;
    expect(second.map((h) => h.id)).toEqual(['middle']);
    expect(second[0]!.expired_at.toISOString()).toBe('2030-06-01T00:04:10.000Z');
    expect((await worker.runOnce()).expired).toEqual([]);
    clock.advance(50_000);
    expect((await worker.runOnce()).expired.map((h) => h.id)).toEqual(['late']);
  });

  it('running loop sleeps until the next hold falls due rather than a full interval', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, intervalMs: 60_000 });
    worker.start();
    try {
      // Created after the worker's first (empty) scan, due in 1.5 s: a worker
      // sleeping its 60 s interval would miss it; the next-due wake does not.
      await new Promise((r) => setTimeout(r, 200));
      await insertDueHolds(db.pool, db.schema, 1, { prefix: 'soon', pastSeconds: -1.5 });
      // The first scan already ran before the insert, so it must be woken.
      worker.wake();
      await waitFor(async () => (await countBy(db.pool, db.schema, 'support_reservations', 'status')).expired === 1, 'expiry');
      const { rows } = await db.pool.query<{ late_ms: number }>(
        `SELECT (extract(epoch FROM expired_at - expires_at) * 1000)::float8 AS late_ms FROM ${ident(db.schema)}.support_reservations`,
      );
      expect(rows[0]!.late_ms).toBeGreaterThanOrEqual(0);
      expect(rows[0]!.late_ms).toBeLessThan(1000);
    } finally {
      await worker.stop();
    }
  });

  it('due holds it had to skip are taken soon after they are released, not after a whole interval', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    await insertDueHolds(db.pool, db.schema, 1, { prefix: 'locked' });
    // Another transaction holds the row (as a slow worker or a confirm would).
    await withClient(db.pool, async (other) => {
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM ${ident(db.schema)}.support_reservations WHERE id = 'locked-0' FOR UPDATE`);
      const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, intervalMs: 60_000 });
      worker.start();
      try {
        await new Promise((r) => setTimeout(r, 300));
        expect((await countBy(db.pool, db.schema, 'support_reservations', 'status')).held).toBe(1);
        await other.query('ROLLBACK');
        // The worker backs off while the row stays locked (1 ms doubling), so it
        // looks again within about as long as it has waited: far inside 5 s,
        // where sleeping the interval would take 60 s.
        await waitFor(async () => (await countBy(db.pool, db.schema, 'support_reservations', 'status')).expired === 1, 'expiry', 5_000);
      } finally {
        await worker.stop();
      }
    });
  });

  it('survives its connections being killed and keeps expiring', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    const pool = createPool({ connectionString: db.url, max: 2, applicationName: 'leasehold-victim' });
    const worker = new ExpiryWorker({ pool, schema: db.schema, intervalMs: 50 });
    worker.start();
    try {
      await insertDueHolds(db.pool, db.schema, 3, { prefix: 'before' });
      await waitFor(async () => (await countBy(db.pool, db.schema, 'support_reservations', 'status')).expired === 3, 'first');
      const killed = await db.pool.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'leasehold-victim'`,
      );
      expect(killed.rowCount).toBeGreaterThan(0);
      await insertDueHolds(db.pool, db.schema, 3, { prefix: 'after' });
      await waitFor(async () => (await countBy(db.pool, db.schema, 'support_reservations', 'status')).expired === 6, 'after kill');
      expect(await countBy(db.pool, db.schema, 'email_outbox', 'state')).toEqual({ pending: 6 });
    } finally {
      await worker.stop();
      await pool.end();
    }
  });
});
