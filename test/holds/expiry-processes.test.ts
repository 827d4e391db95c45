import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countBy, insertDueHolds } from '../helpers/holds.js';
import { cliPath, fixture, kill9, startNode } from '../helpers/processes.js';

let db: TestDatabase;
beforeEach(async () => {
  db = await testDatabase('expiry_proc');
});
afterEach(() => db.close());

describe('expiry worker processes', () => {
  it('two processes against 101 due holds: none vanish, none doubled, one intent each', async () => {
    const ids = await insertDueHolds(db.pool, db.schema, 101);
    const startAt = String(Date.now() + 700);
    const children = [0, 1].map(() => startNode(fixture('expiry-child'), ['--batch', '7', '--start-at', startAt], db.env));
    const results = await Promise.all(children.map(async (c) => ((await c.exited), c.stdout())));
    const expiredBy = results.map((out) =>
      out
        .split('\n')
        .filter((l) => l.startsWith('EXPIRED '))
        .flatMap((l) => JSON.parse(l.slice(8)) as string[]),
    );
    const all = expiredBy.flat();
    expect(new Set(all).size).toBe(101);
    expect(all).toHaveLength(101); // nobody expired a hold twice
    expect([...all].sort()).toEqual([...ids].sort());
    expect(await countBy(db.pool, db.schema, 'support_reservations', 'status')).toEqual({ expired: 101 });
    const { rows } = await db.pool.query<{ reservation_id: string; n: number }>(
      `SELECT reservation_id, count(*)::int AS n FROM ${ident(db.schema)}.email_outbox GROUP BY 1`,
    );
    expect(rows).toHaveLength(101);
    expect(rows.every((r) => r.n === 1)).toBe(true);
  });

  it('a worker SIGKILLed after locking rows and before commit leaves neither expiration nor intent', async () => {
    await insertDueHolds(db.pool, db.schema, 20);
    const child = startNode(fixture('expiry-child'), ['--crash-at', 'expiry.locked'], db.env);
    await child.waitForLine(/^FAULT expiry\.locked/);
    // The rows are locked by the child's open transaction right now.
    const other = await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    expect(other.expired).toHaveLength(0);
    await kill9(child);
    expect(await countBy(db.pool, db.schema, 'support_reservations', 'status')).toEqual({ held: 20 });
    expect(await countBy(db.pool, db.schema, 'email_outbox', 'state')).toEqual({});
    // The server rolls the dead client's transaction back when it notices the
    // closed socket, a moment after the process is gone: wait for its locks.
    await expect
      .poll(async () => (await db.pool.query(`SELECT id FROM ${ident(db.schema)}.support_reservations FOR UPDATE SKIP LOCKED`)).rowCount, {
        timeout: 10_000,
      })
      .toBe(20);
    // Nothing was lost: the next worker expires all of them.
    const after = await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    expect(after.expired).toHaveLength(20);
    expect(await countBy(db.pool, db.schema, 'email_outbox', 'state')).toEqual({ pending: 20 });
  });

  it('a worker SIGKILLed after commit leaves every intent pending', async () => {
    await insertDueHolds(db.pool, db.schema, 20);
    const child = startNode(fixture('expiry-child'), ['--crash-at', 'expiry.committed'], db.env);
    await child.waitForLine(/^FAULT expiry\.committed/);
    await kill9(child);
    expect(await countBy(db.pool, db.schema, 'support_reservations', 'status')).toEqual({ expired: 20 });
    expect(await countBy(db.pool, db.schema, 'email_outbox', 'state')).toEqual({ pending: 20 });
  });

  it('`leasehold expiry-worker` drains on SIGTERM and exits 0', async () => {
    await insertDueHolds(db.pool, db.schema, 5);
    const child = startNode(cliPath, ['expiry-worker'], { ...db.env, LOG_LEVEL: 'info' });
    // Poll the table, not the clock: the worker's first tick expires them.
    for (let i = 0; i < 100; i++) {
      const counts = await countBy(db.pool, db.schema, 'support_reservations', 'status');
      if (counts.expired === 5) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await countBy(db.pool, db.schema, 'support_reservations', 'status')).toEqual({ expired: 5 });
    child.process.kill('SIGTERM');
    const { code } = await child.exited;
    expect(code).toBe(0);
    expect(child.stderr()).toContain('"event":"shutdown.done"');
  });
});
