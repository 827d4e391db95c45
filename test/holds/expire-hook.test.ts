import pg from 'pg';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { checkExpireHook, expireWithHook, sqlExpireHook } from '../../src/holds/expire-hook.js';
import { holdsExpireDue } from '../../src/tables/holds.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { ident, withClient, withTransaction } from '../../src/db/pool.js';
import { readStatus } from '../../src/read/status.js';
import { ConfigError } from '../../src/errors.js';
import { createLeasehold } from '../../src/client/leasehold.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countBy } from '../helpers/holds.js';

/**
 * The application's expiry hook (holds/expire-hook.ts) in the expiry lane: it commits
 * with the expiry, a hold whose hook fails by itself stays held (found by
 * bisecting) while the rest of its batch expires, and it is retried with
 * back-off. Time moves through a ManualClock.
 */
let db: TestDatabase;
let app: string;
const START = new Date('2031-03-01T10:00:00Z');

beforeAll(async () => {
  db = await testDatabase('hook');
  app = `${db.schema}_app`;
  await db.pool.query(`CREATE SCHEMA ${ident(app)}`);
  await db.pool.query(`CREATE TABLE ${ident(app)}.slots (hold_id text PRIMARY KEY, freed_at timestamptz)`);
  // The hold the application cannot release yet: named in a table, so the "fix" is a row.
  await db.pool.query(`CREATE TABLE ${ident(app)}.stuck (hold_id text PRIMARY KEY)`);
  await db.pool.query(`CREATE TABLE ${ident(app)}.slow (hold_id text PRIMARY KEY)`);
  await db.pool.query(
    `CREATE FUNCTION ${ident(app)}.release_slots(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
     DECLARE bad text;
     BEGIN
       SELECT hold_id INTO bad FROM ${ident(app)}.stuck WHERE hold_id = ANY (ids) LIMIT 1;
       IF bad IS NOT NULL THEN
         RAISE EXCEPTION 'slot of % is double-booked (ask jane.doe@example.com)', bad USING ERRCODE = 'P0001';
       END IF;
       IF EXISTS (SELECT 1 FROM ${ident(app)}.slow WHERE hold_id = ANY (ids)) THEN PERFORM pg_sleep(5); END IF;
       UPDATE ${ident(app)}.slots SET freed_at = now() WHERE hold_id = ANY (ids);
     END $$`,
  );
});
afterAll(async () => {
  await db.pool.query(`DROP SCHEMA IF EXISTS ${ident(app)} CASCADE`);
  await db.close();
});

beforeEach(async () => {
  await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
  await db.pool.query(`TRUNCATE ${ident(app)}.slots, ${ident(app)}.stuck, ${ident(app)}.slow`);
});

/** `count` holds due a minute before START, each with its slot in the application's table. */
async function dueHoldsWithSlots(count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `slot-${String(i).padStart(3, '0')}`);
  await db.pool.query(
    `INSERT INTO ${ident(db.schema)}.support_reservations (id, customer_email, expires_at, created_at, request_hash)
     SELECT id, 'customer+' || id || '@example.com', $2::timestamptz - interval '1 minute', $2::timestamptz - interval '1 hour', 'seeded'
       FROM unnest($1::text[]) AS id`,
    [ids, START],
  );
  await db.pool.query(`INSERT INTO ${ident(app)}.slots (hold_id) SELECT unnest($1::text[])`, [ids]);
  return ids;
}

function capturedLog(): { logger: ReturnType<typeof createLogger>; lines: () => Array<Record<string, unknown>>; text: () => string } {
  let text = '';
  const destination = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  const logger = createLogger({ level: 'info', destination });
  return { logger, text: () => text, lines: () => text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const statusOf = async (id: string) =>
  (await db.pool.query<{ status: string }>(`SELECT status FROM ${ident(db.schema)}.support_reservations WHERE id = $1`, [id])).rows[0]!.status;

describe('the expiry hook in the expiry lane', () => {
  it('frees 300 slots with their expiries while the one hold whose hook raises stays held, named, counted and shown', async () => {
    const ids = await dueHoldsWithSlots(301);
    const bad = 'slot-137';
    await db.pool.query(`INSERT INTO ${ident(app)}.stuck VALUES ($1)`, [bad]);
    const clock = new ManualClock(START);
    const metrics = createMetrics();
    const log = capturedLog();
    const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 500, clock, metrics, logger: log.logger, onExpired: sqlExpireHook(`${app}.release_slots`) });

    const run = await worker.runOnce();
    expect(run.expired).toHaveLength(300);
    expect(run.expired.map((h) => h.id)).not.toContain(bad);
    expect(run.hookFailed.map((f) => f.holdId)).toEqual([bad]);

    // Every slot freed is a hold expired, in the same transaction, and the other way round.
    const { rows } = await db.pool.query<{ id: string; status: string; freed: boolean }>(
      `SELECT r.id, r.status, s.freed_at IS NOT NULL AS freed
         FROM ${ident(db.schema)}.support_reservations r JOIN ${ident(app)}.slots s ON s.hold_id = r.id`,
    );
    expect(rows.filter((r) => r.freed)).toHaveLength(300);
    expect(rows.every((r) => r.freed === (r.status === 'expired'))).toBe(true);
    expect(await statusOf(bad)).toBe('held');
    expect((await countBy(db.pool, db.schema, 'email_outbox', 'state')).pending).toBe(300);

    // Named in the log (with the database's error, no address), counted, shown in status.
    const failures = log.lines().filter((l) => l['event'] === 'expire_hook.failed');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ holdId: bad, code: 'P0001', attempts: 1, hook: `${app}.release_slots` });
    expect(failures[0]!['error']).toContain(`slot of ${bad} is double-booked`);
    expect(log.text()).not.toContain('jane.doe@example.com');
    expect(log.text()).not.toContain('customer+');
    expect((await metrics.expireHookFailures.get()).values).toEqual([expect.objectContaining({ labels: { reason: 'error' }, value: 1 })]);
    const status = await readStatus(db.pool, db.schema, { expiryPromiseS: 60, emailPromiseS: 900 });
    expect(status.stats.expiry.hookFailing).toBe(1);
    // The lane is not late: the one hold waits on the application's function, not on the lane.
    expect(status.stats.expiry.dueHolds).toBe(0);
    expect(status.hookFailures.map((f) => [f.holdId, f.attempts, f.code])).toEqual([[bad, 1, 'P0001']]);
    expect(status.hookFailures[0]!.error).toContain('<address>');

    // Nothing else waits, and the failed hold is not retried before its back-off.
    const again = await worker.runOnce();
    expect([again.expired.length, again.hookFailed.length]).toEqual([0, 0]);
    expect(ids).toHaveLength(301);
    // Holds falling due meanwhile expire at once, past the one still waiting (it is due earlier than they are).
    await db.pool.query(
      `INSERT INTO ${ident(db.schema)}.support_reservations (id, customer_email, expires_at, request_hash)
       SELECT 'later-' || i, 'c@example.com', $1::timestamptz + interval '1 second', 'x' FROM generate_series(1, 5) i`,
      [START],
    );
    clock.advance(2000);
    const later = await worker.runOnce();
    expect(later.expired.map((h) => h.id).sort()).toEqual(['later-1', 'later-2', 'later-3', 'later-4', 'later-5']);
    expect(await statusOf(bad)).toBe('held');
  });

  it('retries a failed hold with a growing back-off, then expires it once the application fixes its data', async () => {
    await dueHoldsWithSlots(3);
    const bad = 'slot-001';
    await db.pool.query(`INSERT INTO ${ident(app)}.stuck VALUES ($1)`, [bad]);
    const clock = new ManualClock(START);
    const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, clock, logger: capturedLog().logger, onExpired: sqlExpireHook(`${app}.release_slots`) });
    expect((await worker.runOnce()).hookFailed.map((f) => f.holdId)).toEqual([bad]);
    const retryAt = async () =>
      (await db.pool.query<{ retry_at: Date; attempts: number }>(`SELECT retry_at, attempts FROM ${ident(db.schema)}.expire_hook_failures WHERE hold_id = $1`, [bad])).rows[0];
    const first = (await retryAt())!;
    // Base 5 s, jittered to between half and all of it.
    const firstWaitMs = first.retry_at.getTime() - START.getTime();
    expect(firstWaitMs).toBeGreaterThanOrEqual(2500);
    expect(firstWaitMs).toBeLessThanOrEqual(5000);

    clock.set(first.retry_at.getTime() - 1);
    expect((await worker.runOnce()).hookFailed).toEqual([]);
    // The database keeps microseconds, a Date milliseconds: one more to be past it.
    clock.set(first.retry_at.getTime() + 1);
    const second = await worker.runOnce();
    expect(second.hookFailed.map((f) => f.holdId)).toEqual([bad]);
    const after = (await retryAt())!;
    expect(after.attempts).toBe(2);
    const secondWaitMs = after.retry_at.getTime() - first.retry_at.getTime();
    expect(secondWaitMs).toBeGreaterThanOrEqual(5000);
    expect(secondWaitMs).toBeLessThanOrEqual(10_000);

    // The application fixes its side; at the next try the hold expires and its record goes.
    await db.pool.query(`DELETE FROM ${ident(app)}.stuck`);
    clock.set(after.retry_at.getTime() + 1);
    const fixed = await worker.runOnce();
    expect(fixed.expired.map((h) => h.id)).toEqual([bad]);
    expect(await statusOf(bad)).toBe('expired');
    expect(await retryAt()).toBeUndefined();
    expect((await db.pool.query(`SELECT 1 FROM ${ident(app)}.slots WHERE hold_id = $1 AND freed_at IS NOT NULL`, [bad])).rowCount).toBe(1);
  });

  it('a hook slower than its bound counts as failing (statement_timeout), and the rest of the batch expires', async () => {
    await dueHoldsWithSlots(8);
    await db.pool.query(`INSERT INTO ${ident(app)}.slow VALUES ('slot-005')`);
    const metrics = createMetrics();
    const worker = new ExpiryWorker({
      pool: db.pool,
      schema: db.schema,
      clock: new ManualClock(START),
      metrics,
      logger: capturedLog().logger,
      onExpired: sqlExpireHook(`${app}.release_slots`),
      hookTimeoutMs: 150,
    });
    const run = await worker.runOnce();
    expect(run.expired).toHaveLength(7);
    expect(run.hookFailed).toEqual([expect.objectContaining({ holdId: 'slot-005', code: '57014', timedOut: true })]);
    expect((await metrics.expireHookFailures.get()).values).toEqual([expect.objectContaining({ labels: { reason: 'timeout' }, value: 1 })]);
    expect(await statusOf('slot-005')).toBe('held');
  });

  it("the library's onExpired commits with the expiry, and a throwing callback is bisected the same way", async () => {
    await dueHoldsWithSlots(40);
    const seen: string[][] = [];
    const onExpired = async (tx: { query: (text: string, values?: unknown[]) => Promise<unknown> }, holds: Array<{ id: string; expiresAt: Date; intentId: string | null }>) => {
      seen.push(holds.map((h) => h.id));
      if (holds.some((h) => h.id === 'slot-007' || h.id === 'slot-031')) throw new Error('cannot free slot (mail ops@example.com)');
      expect(holds.every((h) => h.intentId === `reservation-expired:${h.id}`)).toBe(true);
      await tx.query(`UPDATE ${ident(app)}.slots SET freed_at = now() WHERE hold_id = ANY ($1::text[])`, [holds.map((h) => h.id)]);
    };
    const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, clock: new ManualClock(START), logger: capturedLog().logger, onExpired });
    const run = await worker.runOnce();
    expect(run.expired).toHaveLength(38);
    expect(run.hookFailed.map((f) => f.holdId).sort()).toEqual(['slot-007', 'slot-031']);
    // The whole batch's statement was rolled back: its outlook is not the one that commits, the tick reads its own.
    expect(run.outlook).toBeUndefined();
    expect(run.hookFailed[0]!.error).toBe('cannot free slot (mail <address>)');
    expect(run.hookFailed[0]!.code).toBeNull();
    expect((await db.pool.query(`SELECT 1 FROM ${ident(app)}.slots WHERE freed_at IS NOT NULL`)).rowCount).toBe(38);
    // Bisection: far fewer calls than one per hold.
    expect(seen.length).toBeLessThan(25);
    expect(seen[0]).toHaveLength(40);
  });

  it('two workers bisecting at once: every good hold expires once with its slot, the bad one stays held', async () => {
    await dueHoldsWithSlots(200);
    await db.pool.query(`INSERT INTO ${ident(app)}.stuck VALUES ('slot-150')`);
    await db.pool.query(`ALTER TABLE ${ident(app)}.slots ADD COLUMN IF NOT EXISTS freed integer NOT NULL DEFAULT 0`);
    await db.pool.query(
      `CREATE OR REPLACE FUNCTION ${ident(app)}.count_frees(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
       BEGIN
         IF EXISTS (SELECT 1 FROM ${ident(app)}.stuck WHERE hold_id = ANY (ids)) THEN RAISE EXCEPTION 'stuck'; END IF;
         UPDATE ${ident(app)}.slots SET freed = freed + 1 WHERE hold_id = ANY (ids);
       END $$`,
    );
    const worker = () =>
      new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 60, clock: new ManualClock(START), logger: capturedLog().logger, onExpired: sqlExpireHook(`${app}.count_frees`) });
    const [a, b] = [worker(), worker()];
    const drain = async (w: ExpiryWorker) => {
      for (let i = 0; i < 10; i++) await w.runOnce();
    };
    await Promise.all([drain(a), drain(b)]);
    const { rows } = await db.pool.query<{ freed: number; n: number }>(`SELECT freed, count(*)::int AS n FROM ${ident(app)}.slots GROUP BY freed ORDER BY freed`);
    expect(rows).toEqual([{ freed: 0, n: 1 }, { freed: 1, n: 199 }]);
    expect(await countBy(db.pool, db.schema, 'support_reservations', 'status')).toEqual({ expired: 199, held: 1 });
    expect(await statusOf('slot-150')).toBe('held');
    await db.pool.query(`ALTER TABLE ${ident(app)}.slots DROP COLUMN freed`);
  });

  it('a callback stuck outside the database is given up on a second after its bound: it fails as a timeout, and its late queries are refused', async () => {
    await dueHoldsWithSlots(2);
    let stuckTx: { query: (text: string, values?: unknown[]) => Promise<unknown> } | undefined;
    const onExpired = async (tx: NonNullable<typeof stuckTx>, holds: Array<{ id: string }>) => {
      if (holds.some((h) => h.id === 'slot-001')) {
        stuckTx = tx;
        // Waiting on something that never answers (no SQL: statement_timeout cannot end it).
        await new Promise(() => {});
      }
      await tx.query(`UPDATE ${ident(app)}.slots SET freed_at = now() WHERE hold_id = ANY ($1::text[])`, [holds.map((h) => h.id)]);
    };
    const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, clock: new ManualClock(START), logger: capturedLog().logger, onExpired, hookTimeoutMs: 100 });
    const started = performance.now();
    const run = await worker.runOnce();
    // The whole batch, then slot-001 alone: two calls given up on, each 100 ms + 1 s after it began.
    expect(performance.now() - started).toBeGreaterThanOrEqual(2 * 1100);
    expect(run.expired.map((h) => h.id)).toEqual(['slot-000']);
    expect(run.hookFailed).toEqual([expect.objectContaining({ holdId: 'slot-001', code: '57014', timedOut: true, error: 'onExpired did not finish within 100 ms' })]);
    expect(await statusOf('slot-001')).toBe('held');
    // What the stuck callback sends now cannot join a transaction that is no longer its call's.
    await expect(stuckTx!.query(`UPDATE ${ident(app)}.slots SET freed_at = now()`)).rejects.toThrow(/no longer this call's \(it ran past 100 ms\)/);
    const { rows } = await db.pool.query<{ hold_id: string }>(`SELECT hold_id FROM ${ident(app)}.slots WHERE freed_at IS NOT NULL`);
    expect(rows.map((r) => r.hold_id)).toEqual(['slot-000']);
  });

  it('a group still failing when the bisecting budget is spent stays held as a whole, each hold told why it was not isolated', async () => {
    await dueHoldsWithSlots(8);
    await db.pool.query(`INSERT INTO ${ident(app)}.stuck VALUES ('slot-003')`);
    const hook = { onExpired: sqlExpireHook(`${app}.release_slots`), name: 'release_slots', timeoutMs: 1000 };
    // A budget already spent: the first failing call is not split at all.
    const batch = await withTransaction(db.pool, (client) =>
      expireWithHook(client, db.schema, hook, (only) => holdsExpireDue(client, db.schema, 500, START, null, null, only), { budgetMs: -1 }),
    );
    expect(batch.expired).toEqual([]);
    expect(batch.failed.map((f) => f.holdId).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `slot-00${i}`));
    for (const f of batch.failed) {
      expect(f.error).toBe('slot of slot-003 is double-booked (ask <address>) (not isolated: the hook failed for a group of 8 holds and bisecting ran out of its -1 ms)');
      expect(f.code).toBe('P0001');
    }
    expect(await countBy(db.pool, db.schema, 'support_reservations', 'status')).toEqual({ held: 8 });
  });

  it("bisecting restores the session's own statement_timeout after each hook call", async () => {
    await dueHoldsWithSlots(6);
    await db.pool.query(`INSERT INTO ${ident(app)}.stuck VALUES ('slot-004')`);
    const hook = { onExpired: sqlExpireHook(`${app}.release_slots`), name: 'release_slots', timeoutMs: 250 };
    // (withClient: the checked-out client has an error listener.)
    await withClient(db.pool, async (client) => {
      await client.query(`SET statement_timeout = '7s'`);
      try {
        await client.query('BEGIN');
        const batch = await expireWithHook(client, db.schema, hook, (only) => holdsExpireDue(client, db.schema, 500, START, null, null, only));
        expect([batch.expired.length, batch.failed.map((f) => f.holdId)]).toEqual([5, ['slot-004']]);
        // The statements after the hook calls (the failures' record, the commit) run under the session's bound, not the hook's.
        expect((await client.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout).toBe('7s');
        await client.query('COMMIT');
      } finally {
        await client.query('ROLLBACK; RESET statement_timeout');
      }
    });
  });

  it('a batch whose hook succeeds costs five round trips: begin, expire (reading its outlook), the hook\'s setup, the hook, commit', async () => {
    await dueHoldsWithSlots(5);
    const statements: string[] = [];
    const counting = new pg.Pool({ connectionString: db.url, max: 1 });
    counting.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text;
        statements.push(text.trim().split(/\s+/).slice(0, 2).join(' '));
        return query(...args);
      };
    });
    try {
      const worker = new ExpiryWorker({ pool: counting, schema: db.schema, clock: new ManualClock(START), logger: capturedLog().logger, onExpired: sqlExpireHook(`${app}.release_slots`) });
      const run = await worker.runOnce();
      expect(run.expired).toHaveLength(5);
      expect(statements).toHaveLength(5);
      // The short batch's statement also read the outlook the lane sleeps on: the tick reads nothing more.
      expect(run.outlook).toEqual({ lockedElsewhere: 0, nextDueInMs: null });
      expect(statements[0]).toBe('BEGIN; SET');
      expect(statements.at(-1)).toBe('COMMIT');
      expect((await db.pool.query(`SELECT 1 FROM ${ident(app)}.slots WHERE freed_at IS NOT NULL`)).rowCount).toBe(5);
    } finally {
      await counting.end();
    }
  });

  it('createLeasehold passes onExpired to its expiry lane', async () => {
    await dueHoldsWithSlots(3);
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, clock: new ManualClock(START), logger: capturedLog().logger });
    const worker = lh.expiryWorker({
      onExpired: async (tx, holds) => {
        await tx.query(`UPDATE ${ident(app)}.slots SET freed_at = now() WHERE hold_id = ANY ($1::text[])`, [holds.map((h) => h.id)]);
      },
    });
    expect((await worker.runOnce()).expired).toHaveLength(3);
    expect((await db.pool.query(`SELECT 1 FROM ${ident(app)}.slots WHERE freed_at IS NOT NULL`)).rowCount).toBe(3);
  });

  it('a rolled-back expiry takes the hook changes with it (they commit together or not at all)', async () => {
    await dueHoldsWithSlots(5);
    const worker = new ExpiryWorker({
      pool: db.pool,
      schema: db.schema,
      clock: new ManualClock(START),
      logger: capturedLog().logger,
      onExpired: sqlExpireHook(`${app}.release_slots`),
      faults: { at: async (point: string) => { if (point === 'expiry.locked') throw new Error('crash before commit'); } } as never,
    });
    await expect(worker.runOnce()).rejects.toThrow('crash before commit');
    expect((await db.pool.query(`SELECT 1 FROM ${ident(app)}.slots WHERE freed_at IS NOT NULL`)).rowCount).toBe(0);
    expect(await countBy(db.pool, db.schema, 'support_reservations', 'status')).toEqual({ held: 5 });
  });

  it('checkExpireHook accepts a function taking text[] and names LEASEHOLD_EXPIRE_HOOK for anything else', async () => {
    await checkExpireHook(db.pool, `${app}.release_slots`);
    await db.pool.query(`CREATE OR REPLACE FUNCTION ${ident(app)}.takes_int(n int) RETURNS void LANGUAGE sql AS 'SELECT 1'`);
    await db.pool.query(`CREATE OR REPLACE PROCEDURE ${ident(app)}.a_procedure(ids text[]) LANGUAGE sql AS 'SELECT 1'`);
    for (const [name, message] of [
      [`${app}.missing`, /no function .*missing\(text\[\]\)/],
      [`${app}.takes_int`, /no function .*takes_int\(text\[\]\)/],
      [`no_such_schema.release_slots`, /no function/],
      [`${app}.a_procedure`, /is a procedure/],
      ['Release_Slots', /must be <schema>\.<function>/],
      [`${app}.x; DROP TABLE y`, /must be <schema>\.<function>/],
    ] as const) {
      const error = await checkExpireHook(db.pool, name).catch((e: unknown) => e);
      expect(error, name).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe('LEASEHOLD_EXPIRE_HOOK');
      expect((error as Error).message).toMatch(message);
    }
  });
});
