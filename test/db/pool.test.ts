import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, readAll, type Queryable } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('pool');
});
afterAll(() => db.close());

/** Reads that count how many of them are running at once. */
function countingReads(on: Queryable, n: number) {
  const seen = { running: 0, most: 0 };
  const reads = Array.from({ length: n }, (_, i) => async () => {
    seen.running++;
    seen.most = Math.max(seen.most, seen.running);
    try {
      const { rows } = await on.query<{ i: number }>('SELECT $1::int AS i, pg_sleep(0.02)', [i]);
      return rows[0]!.i;
    } finally {
      seen.running--;
    }
  });
  return { reads, seen };
}

describe('readAll', () => {
  it('runs the reads side by side on a pool, and answers in the order asked', async () => {
    const pool = createPool({ connectionString: db.url, max: 4 });
    try {
      const { reads, seen } = countingReads(pool, 4);
      expect(await readAll(pool, reads)).toEqual([0, 1, 2, 3]);
      expect(seen.most).toBe(4);
    } finally {
      await pool.end();
    }
  });

  it("runs them one after another on an application's single client, without pg's overlapping-query warning", async () => {
    const client = new pg.Client({ connectionString: db.url });
    client.on('error', () => {});
    await client.connect();
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    try {
      const { reads, seen } = countingReads(client, 3);
      expect(await readAll(client, reads)).toEqual([0, 1, 2]);
      expect(seen.most).toBe(1);
      // A warning is emitted on the next tick; let it arrive if there is one.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.includes('already executing a query'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await client.end();
    }
  });
});
