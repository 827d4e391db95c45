import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, ident, withClient } from '../../src/db/pool.js';
import { preparedRefused, queryPrepared } from '../../src/db/prepared.js';
import { holdsExpireDueWithOutlook } from '../../src/tables/holds.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertSentStories } from '../helpers/holds.js';
import { rowsReadFrom } from '../helpers/plans.js';

/**
 * db/prepared.ts: the expiry statement runs by name on a pool, unnamed on
 * a client, and unnamed from then on where a pooler refused a name, each
 * statement run exactly once either way.
 */
let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('prepared');
  s = ident(db.schema);
  await db.pool.query(`CREATE TABLE ${s}.calls (n int NOT NULL)`);
});
afterAll(() => db.close());

/** A pool of one connection, so that what it prepared can be read on it. */
async function onePool(work: (pool: pg.Pool) => Promise<void>): Promise<void> {
  const pool = createPool({ connectionString: db.url, max: 1 });
  try {
    await work(pool);
  } finally {
    await pool.end();
  }
}
const preparedNames = async (q: { query: pg.Pool['query'] }) =>
  (await q.query<{ name: string }>(`SELECT name FROM pg_prepared_statements WHERE name LIKE 'leasehold\\_%' ORDER BY name`)).rows.map((r) => r.name);
const insertCall = (n: number): [string, unknown[]] => [`INSERT INTO ${s}.calls (n) VALUES ($1) RETURNING n`, [n]];
const calls = async () => (await db.pool.query<{ n: number }>(`SELECT n FROM ${s}.calls ORDER BY n`)).rows.map((r) => r.n);

describe('queryPrepared', () => {
  it('on a pool, names the statement by its text: prepared once on the connection, answering as the unnamed statement does', async () => {
    await db.pool.query(`TRUNCATE ${s}.calls`);
    await onePool(async (pool) => {
      const answers = [];
      for (const n of [1, 2, 3]) answers.push((await queryPrepared<{ n: number }>(pool, ...insertCall(n))).rows);
      expect(answers).toEqual([[{ n: 1 }], [{ n: 2 }], [{ n: 3 }]]);
      const names = await preparedNames(pool);
      expect(names).toHaveLength(1);
      // Another text, another name.
      await queryPrepared(pool, `SELECT $1::int AS n`, [1]);
      expect(await preparedNames(pool)).toHaveLength(2);
      expect(preparedRefused(pool)).toBe(false);
    });
    expect(await calls()).toEqual([1, 2, 3]);
  });

  it('on a client (a transaction of the caller\'s), runs it unnamed', async () => {
    await withClient(db.pool, async (client) => {
      await client.query('BEGIN');
      expect((await queryPrepared<{ n: number }>(client, `SELECT $1::int AS n`, [7])).rows).toEqual([{ n: 7 }]);
      expect(await preparedNames(client)).toEqual([]);
      await client.query('ROLLBACK');
    });
  });

  it('where the server refuses the name (a transaction pooler\'s other connection), runs the statement unnamed, once, and that pool unnamed from then on', async () => {
    await db.pool.query(`TRUNCATE ${s}.calls`);
    await onePool(async (pool) => {
      await queryPrepared(pool, ...insertCall(1));
      // What a transaction-mode pooler does to a name: the next server connection does not have it.
      await pool.query('DEALLOCATE ALL');
      expect((await queryPrepared<{ n: number }>(pool, ...insertCall(2))).rows).toEqual([{ n: 2 }]);
      expect(preparedRefused(pool)).toBe(true);
      await queryPrepared(pool, ...insertCall(3));
      expect(await preparedNames(pool)).toEqual([]);
    });
    // Each statement ran exactly once: the refused one was not run before its retry.
    expect(await calls()).toEqual([1, 2, 3]);
  });

  it('where the name is taken on the server connection (another client\'s, behind a pooler), runs unnamed', async () => {
    await onePool(async (pool) => {
      const text = `SELECT $1::int + 0 AS n`;
      // The name db/prepared.ts gives the text, prepared behind pg's back, as another client of a pooler would have.
      const name = `leasehold_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
      await pool.query(`PREPARE ${name} (int) AS SELECT $1 + 0 AS n`);
      expect((await queryPrepared<{ n: number }>(pool, text, [5])).rows).toEqual([{ n: 5 }]);
      expect(preparedRefused(pool)).toBe(true);
    });
  });

  it('other errors are the caller\'s, not a reason to stop naming', async () => {
    await onePool(async (pool) => {
      await expect(queryPrepared(pool, `SELECT 1 / $1::int AS n`, [0])).rejects.toMatchObject({ code: '22012' });
      expect(preparedRefused(pool)).toBe(false);
    });
  });
});

describe('the expiry statement\'s generic plan', () => {
  it('reads the holds and intents its custom plan reads, beside thousands of holds held for later and a history', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 1e6, burst: 1e6 });
    await insertSentStories(db.pool, db.schema, 5000);
    await db.pool.query(
      `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, request_hash)
       SELECT 'later-' || g, 'c@example.com', 'held', now() + interval '1 hour' + make_interval(secs => g), now(), 'seeded'
         FROM generate_series(1, 5000) g
       UNION ALL
       SELECT 'due-' || g, 'c@example.com', 'held', now() - make_interval(secs => g), now() - interval '1 hour', 'seeded'
         FROM generate_series(1, 10) g`,
    );
    for (const table of ['support_reservations', 'email_outbox']) await db.pool.query(`ANALYZE ${s}.${table}`);
    const handOff = { token: randomUUID(), leaseMs: 30_000, provider: 'sandbox', account: 'default', limit: 100, emailsPerPermit: 1 };
    for (const lease of [null, handOff]) {
      const expire = (q: Parameters<typeof holdsExpireDueWithOutlook>[0]) => holdsExpireDueWithOutlook(q, db.schema, 100, null, { channel: 'prepared_test' }, null, lease);
      for (const table of ['support_reservations', 'email_outbox']) {
        const custom = await rowsReadFrom(db.pool, table, expire, 'custom');
        const generic = await rowsReadFrom(db.pool, table, expire, 'generic');
        expect(generic, `${table}, ${lease ? 'handing off' : 'alone'}`).toBeLessThanOrEqual(custom + 10);
        expect(generic).toBeLessThan(100);
      }
      // And the batch is there to read: the due holds were expired in each (rolled back) run.
      expect(await rowsReadFrom(db.pool, 'support_reservations', expire, 'generic')).toBeGreaterThanOrEqual(10);
    }
  });
});
