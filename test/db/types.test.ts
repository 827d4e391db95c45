import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The whole library, as an application imports it: whatever it does at
// import time has happened before the tests below run.
import * as leasehold from '../../src/index.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { laneStats } from '../../src/read/stats.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('types');
});
afterAll(() => db.close());

/** An application's own client, created with pg's defaults. */
async function withPlainClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: db.url });
  client.on('error', () => {}); // a lost connection fails the query below instead
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

describe('type parsing', () => {
  it("importing leasehold leaves the application's pg alone: int8 still reads as an exact string", async () => {
    expect(leasehold.createPool).toBeTypeOf('function');
    const { rows } = await withPlainClient((client) => client.query('SELECT 9007199254740993::int8 AS n'));
    expect(rows[0].n).toBe('9007199254740993');
  });

  it('a leasehold pool reads int8 counts as numbers', async () => {
    const pool = leasehold.createPool({ connectionString: db.url, max: 1 });
    try {
      const { rows } = await pool.query('SELECT count(*) AS n, 42::int8 AS m FROM generate_series(1, 3)');
      expect(rows[0]).toEqual({ n: 3, m: 42 });
    } finally {
      await pool.end();
    }
  });

  it("library functions given the application's client still return numbers", async () => {
    await insertDueHolds(db.pool, db.schema, 3);
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'later' });
    const stats = await withPlainClient((client) => laneStats(client, db.schema));
    expect(stats.expiry.dueHolds).toBe(2);
    expect(stats.delivery.backlog).toBe(3);
    expect(stats.delivery.intentsByState).toEqual({ pending: 3, sent: 0, rejected: 0, dead: 0, voided: 0, missed_deadline: 0 });
    expect(stats.expiry.oldestDueAgeSeconds).toBeTypeOf('number');
    expect(stats.delivery.oldestPendingAgeSeconds).toBeTypeOf('number');
  });
});
