import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmHold, extendHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { HoldNotHeldError } from '../../src/errors.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countBy, insertDueHolds } from '../helpers/holds.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('races');
});
afterAll(() => db.close());

describe('confirmation racing expiry', () => {
  it('1,000 races each have exactly one winner, and intents exist only for expired holds', async () => {
    const ids = await insertDueHolds(db.pool, db.schema, 1000, { prefix: 'race' });
    const workers = [0, 1].map(() => new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 25 }));
    const confirmWins = new Set<string>();
    const confirmLosses = new Set<string>();

    const expiring = workers.map(async (worker) => {
      for (;;) {
        const run = await worker.runOnce();
        if (run.expired.length === 0) return;
      }
    });
    // Confirm in an order that crosses the workers' (expires_at) order.
    const shuffled = [...ids].sort(() => Math.random() - 0.5);
    const confirming = Array.from({ length: 8 }, async (_, lane) => {
      for (let i = lane; i < shuffled.length; i += 8) {
        const id = shuffled[i]!;
        try {
          await confirmHold(db.pool, id, { schema: db.schema });
          confirmWins.add(id);
        } catch (error) {
          expect(error).toBeInstanceOf(HoldNotHeldError);
          expect((error as HoldNotHeldError).status).toBe('expired');
          confirmLosses.add(id);
        }
      }
    });
    await Promise.all([...expiring, ...confirming]);

    const s = ident(db.schema);
    const { rows } = await db.pool.query<{ id: string; status: string; intents: number }>(
      `SELECT r.id, r.status, count(o.id)::int AS intents
         FROM ${s}.support_reservations r LEFT JOIN ${s}.email_outbox o ON o.reservation_id = r.id
        GROUP BY r.id, r.status`,
    );
    expect(rows).toHaveLength(1000);
    for (const row of rows) {
      if (row.status === 'confirmed') {
        expect(confirmWins.has(row.id)).toBe(true);
        expect(row.intents).toBe(0);
      } else {
        expect(row.status).toBe('expired');
        expect(confirmLosses.has(row.id)).toBe(true);
        expect(row.intents).toBe(1);
      }
    }
    expect(confirmWins.size + confirmLosses.size).toBe(1000);
    // Both sides won some races, so the test really raced.
    expect(confirmWins.size).toBeGreaterThan(0);
    expect(confirmLosses.size).toBeGreaterThan(0);
    expect(await countBy(db.pool, db.schema, 'email_outbox', 'state')).toEqual({ pending: confirmLosses.size });
  });
});

describe('extension racing expiry', () => {
  it('1,000 races each have exactly one winner: an extended hold is held with no intent, an expired one cannot be extended', async () => {
    const ids = await insertDueHolds(db.pool, db.schema, 1000, { prefix: 'extend-race' });
    const workers = [0, 1].map(() => new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 25 }));
    const extendWins = new Set<string>();
    const extendLosses = new Set<string>();
    const expiring = workers.map(async (worker) => {
      for (;;) {
        const run = await worker.runOnce();
        if (run.expired.length === 0) return;
      }
    });
    const shuffled = [...ids].sort(() => Math.random() - 0.5);
    const extending = Array.from({ length: 8 }, async (_, lane) => {
      for (let i = lane; i < shuffled.length; i += 8) {
        const id = shuffled[i]!;
        try {
          await extendHold(db.pool, id, { ttlSeconds: 3600 }, { schema: db.schema });
          extendWins.add(id);
        } catch (error) {
          expect(error).toBeInstanceOf(HoldNotHeldError);
          expect((error as HoldNotHeldError).status).toBe('expired');
          extendLosses.add(id);
        }
      }
    });
    await Promise.all([...expiring, ...extending]);

    const s = ident(db.schema);
    const { rows } = await db.pool.query<{ id: string; status: string; intents: number; extensions: number; future: boolean }>(
      `SELECT r.id, r.status, r.expires_at > now() + interval '30 minutes' AS future,
              (SELECT count(*) FROM ${s}.email_outbox o WHERE o.reservation_id = r.id)::int AS intents,
              (SELECT count(*) FROM ${s}.hold_extensions x WHERE x.hold_id = r.id)::int AS extensions
         FROM ${s}.support_reservations r WHERE r.id LIKE 'extend-race%'`,
    );
    expect(rows).toHaveLength(1000);
    for (const row of rows) {
      if (extendWins.has(row.id)) {
        expect(row).toMatchObject({ status: 'held', intents: 0, extensions: 1, future: true });
      } else {
        expect(extendLosses.has(row.id)).toBe(true);
        expect(row).toMatchObject({ status: 'expired', intents: 1, extensions: 0 });
      }
    }
    expect(extendWins.size + extendLosses.size).toBe(1000);
    expect(extendWins.size).toBeGreaterThan(0);
    expect(extendLosses.size).toBeGreaterThan(0);
  });
});
