import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, unboundedQuery } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The pool's clients apply the query timeout themselves
 * (src/db/query-timeout.ts), as pg's `query_timeout` does: the statements
 * here really run long on the server (pg_sleep); nothing is faked. A
 * connection gone silent is test/db/bounds.test.ts.
 */

let db: TestDatabase;
let pool: pg.Pool;
beforeAll(async () => {
  db = await testDatabase('query_timeout');
  pool = createPool({ connectionString: db.url, max: 2, queryTimeoutMs: 200 });
});
afterAll(async () => {
  await pool.end();
  await db.close();
});

/** A client of the pool, given back as broken afterwards (a query that timed out may still be running on it). */
async function onClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // Checked out, the pool's own listener is off: an error of the connection is this test's.
  const errors: Error[] = [];
  client.on('error', (error) => errors.push(error));
  try {
    const result = await work(client);
    expect(errors).toEqual([]);
    return result;
  } finally {
    client.release(true);
  }
}

describe('the query timeout of a pool', () => {
  it('fails a statement that runs longer, through pool.query and through a client, and answers one that does not', async () => {
    await expect(pool.query('SELECT pg_sleep(1)')).rejects.toThrow(/^Query read timeout$/);
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await onClient(async (client) => {
      const error = await client.query('SELECT pg_sleep(1)').then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error?.message).toBe('Query read timeout');
      // The stack leads back here, not only to the socket's read.
      expect(error?.stack).toContain('query-timeout.test');
    });
  });

  it("takes a query's own query_timeout in place of the pool's", async () => {
    // Longer than the pool's 200 ms, within its own.
    const slow = await pool.query<{ done: string }>({ text: "SELECT pg_sleep(0.4), 'done' AS done", query_timeout: 5000 } as pg.QueryConfig);
    expect(slow.rows[0]!.done).toBe('done');
    const unbounded = await pool.query<{ done: string }>(unboundedQuery("SELECT pg_sleep(0.4), 'done' AS done"));
    expect(unbounded.rows[0]!.done).toBe('done');
    // Shorter than the pool's: a statement the pool's 200 ms would wait for fails at 50.
    await expect(pool.query({ text: 'SELECT pg_sleep(0.15)', query_timeout: 50 } as pg.QueryConfig)).rejects.toThrow(/Query read timeout/);
  });

  it('calls a callback once, with the timeout, and not again when the statement ends', async () => {
    await onClient(async (client) => {
      const calls: Array<Error | null> = [];
      await new Promise<void>((resolve) => {
        client.query('SELECT pg_sleep(0.4)', (error: Error | null) => {
          calls.push(error);
          resolve();
        });
      });
      expect(calls.map((e) => e?.message)).toEqual(['Query read timeout']);
      // Past the statement's end: its answer came and was ignored.
      await client.query({ text: 'SELECT pg_sleep(0.5)', query_timeout: 5000 } as pg.QueryConfig);
      expect(calls).toHaveLength(1);
    });
  });

  it('takes a query that timed out while queued behind another out of the queue: it never runs, and the client goes on', async () => {
    await onClient(async (client) => {
      const running = client.query({ text: 'SELECT pg_sleep(0.4)', query_timeout: 5000 } as pg.QueryConfig);
      const queued = client.query({ text: "SELECT set_config('leasehold.queued', 'ran', false)", query_timeout: 50 } as pg.QueryConfig);
      await expect(queued).rejects.toThrow(/Query read timeout/);
      await running;
      const { rows } = await client.query<{ value: string | null }>("SELECT current_setting('leasehold.queued', true) AS value");
      expect(rows[0]!.value ?? '').toBe('');
    });
  });

  it("is not pg's own query_timeout, whose callback wrapper kept every query's rows alive into the old generation", () => {
    const options = (pool as unknown as { options: Record<string, unknown> }).options;
    expect(options.query_timeout).toBeUndefined();
    expect(options.Client).not.toBe(pg.Client);
  });

  it('is off at 0: the clients are pg.Client itself', async () => {
    const untimed = createPool({ connectionString: db.url, max: 1, queryTimeoutMs: 0 });
    try {
      expect((untimed as unknown as { options: { Client: unknown } }).options.Client).toBe(pg.Client);
      expect((await untimed.query<{ done: string }>("SELECT pg_sleep(0.3), 'done' AS done")).rows[0]!.done).toBe('done');
    } finally {
      await untimed.end();
    }
  });
});
