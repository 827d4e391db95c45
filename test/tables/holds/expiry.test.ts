import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ident, withClient } from '../../../src/db/pool.js';
import { holdsDueOutlook, holdsExpireDueWithOutlook } from '../../../src/tables/holds/expiry.js';
import { testDatabase, type TestDatabase } from '../../helpers/database.js';
import { insertDueHolds } from '../../helpers/holds.js';

/**
 * The expiry statement that also reads the lane's outlook (tables/holds/expiry.ts
 * holdsExpireDueWithOutlook): one statement a tick, answering what
 * holdsDueOutlook would have after it.
 */
let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('holds_outlook');
  s = ident(db.schema);
});
afterAll(() => db.close());
beforeEach(async () => {
  await db.pool.query(`TRUNCATE ${s}.support_reservations CASCADE`);
});

const expire = (limit: number) => holdsExpireDueWithOutlook(db.pool, db.schema, limit, null, null, null);

async function holdLater(id: string, inSeconds: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, created_at, request_hash)
     VALUES ($1, 'later@example.com', now() + make_interval(secs => $2), now(), 'seeded')`,
    [id, inSeconds],
  );
}

describe('holdsExpireDueWithOutlook', () => {
  it('a short batch: the holds expired with their intents, and when the next one falls due', async () => {
    const due = await insertDueHolds(db.pool, db.schema, 3, { prefix: 'short' });
    await holdLater('later', 60);
    const run = await expire(10);
    expect(run.expired.map((h) => h.id).sort()).toEqual(due);
    expect(run.expired.every((h) => h.intent_id === `reservation-expired:${h.id}`)).toBe(true);
    expect(run.outlook!.lockedElsewhere).toBe(0);
    expect(run.outlook!.nextDueInMs).toBeGreaterThan(55_000);
    expect(run.outlook!.nextDueInMs).toBeLessThanOrEqual(60_000);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${s}.email_outbox`);
    expect(rows[0].n).toBe(3);
  });

  it('counts the due holds another transaction holds, as holdsDueOutlook does after it', async () => {
    await insertDueHolds(db.pool, db.schema, 5, { prefix: 'locked' });
    await withClient(db.pool, async (other) => {
      await other.query('BEGIN');
      await other.query(`SELECT id FROM ${s}.support_reservations WHERE id IN ('locked-0', 'locked-1') FOR UPDATE`);
      try {
        const run = await expire(10);
        expect(run.expired).toHaveLength(3);
        expect(run.outlook).toEqual({ lockedElsewhere: 2, nextDueInMs: null });
        expect((await holdsDueOutlook(db.pool, db.schema, null)).lockedElsewhere).toBe(2);
      } finally {
        await other.query('ROLLBACK');
      }
    });
  });

  it('a full batch answers no outlook: the lane runs again at once', async () => {
    await insertDueHolds(db.pool, db.schema, 4, { prefix: 'full' });
    const run = await expire(4);
    expect(run.expired).toHaveLength(4);
    expect(run.outlook).toBeNull();
  });

  it('nothing due: no holds, and the outlook still says when the next falls due (null when none is held)', async () => {
    expect(await expire(10)).toEqual({ expired: [], outlook: { lockedElsewhere: 0, nextDueInMs: null }, handed: null });
    await holdLater('soon', 5);
    const run = await expire(10);
    expect(run.expired).toEqual([]);
    expect(run.outlook!.nextDueInMs).toBeGreaterThan(0);
    expect(run.outlook!.nextDueInMs).toBeLessThanOrEqual(5000);
  });
});
