import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmHold } from '../../src/holds/holds.js';
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
