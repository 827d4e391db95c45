import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { buildApp, startApiServer } from '../../src/server/app.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { LogCapture, TOKEN } from '../helpers/server.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('api_shutdown');
});
afterAll(() => db.close());

describe('a request while the server shuts down', () => {
  it('answers 503 shutting_down in the one error shape, and does not keep the connection', async () => {
    const app = buildApp({ pool: db.pool, schema: db.schema, config: loadConfig({}), logger: silentLogger, metrics: createMetrics(), apiToken: TOKEN });
    // Hold the close at its start (after the server's own preClose hook), with the socket still listening.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let closingStarted!: () => void;
    const started = new Promise<void>((resolve) => (closingStarted = resolve));
    app.addHook('preClose', async () => {
      closingStarted();
      await held;
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    expect((await fetch(`${url}/v1/token`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);

    const closed = app.close();
    await started;
    const during = await fetch(`${url}/v1/token`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(during.status).toBe(503);
    expect(during.headers.get('connection')).toBe('close');
    expect(await during.json()).toEqual({ error: { code: 'shutting_down', message: 'this server is shutting down; try again' } });
    release();
    await closed;
  });
});

describe('a request in flight when the server closes', () => {
  /**
   * The API on a free port and a POST /v1/delivery/pause that cannot finish
   * yet: another transaction holds the delivery_control row it updates.
   */
  async function pauseHeldByALock(drainMs?: number) {
    const logs = new LogCapture();
    const server = await startApiServer({
      pool: db.pool,
      schema: db.schema,
      config: loadConfig({}),
      logger: createLogger({ level: 'warn', destination: logs }),
      metrics: createMetrics(),
      apiToken: TOKEN,
      port: 0,
      ...(drainMs !== undefined ? { drainMs } : {}),
    });
    const lock = await db.pool.connect();
    await lock.query('BEGIN');
    await lock.query(`SELECT 1 FROM ${db.schema}.delivery_control FOR UPDATE`);
    const inFlight = fetch(`${server.url}/v1/delivery/pause`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    // The request has reached the database once it waits on the lock.
    for (;;) {
      const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%delivery_control%'`);
      if (rows[0].n > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const release = async () => {
      await lock.query('ROLLBACK');
      lock.release();
    };
    return { server, inFlight, release, logs };
  }

  it('is answered, with connection: close, and the close does not wait out the keep-alive timeout (72 s)', async () => {
    const { server, inFlight, release } = await pauseHeldByALock();
    const closed = server.close();
    await release();
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(answer.headers.get('connection')).toBe('close');
    // Before this was fixed the close resolved only when the kept-alive connection timed out, long after this test's 5 s.
    await closed;
    await db.pool.query(`UPDATE ${db.schema}.delivery_control SET paused = false`);
  });

  it('has its connection cut after the drain when it cannot finish, and the cut is logged', async () => {
    const { server, inFlight, release, logs } = await pauseHeldByALock(50);
    const answered = inFlight.then(
      (response) => response.status,
      (error: Error) => error.name,
    );
    await server.close();
    expect(await answered).toBe('TypeError'); // fetch failed: the socket was closed with no answer
    expect(logs.events()).toEqual([expect.objectContaining({ event: 'api.close_forced', connections: 1, drainMs: 50 })]);
    await release();
  });
});
