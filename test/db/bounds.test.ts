import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Listener } from '../../src/db/listener.js';
import { createPool } from '../../src/db/pool.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createLogger, silentLogger } from '../../src/observability/logger.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countWhere, intentsAndLog, waitForCount } from '../helpers/fleet.js';
import { insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';
import { LogCapture } from '../helpers/server.js';
import { proxyInFront, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * No await on the database without a bound. A connection whose peer goes
 * silent (a failover, a partition, a frozen machine: bytes leave, nothing
 * comes back, nothing closes) is what the TCP proxy's freeze() makes. Before
 * the bounds, a round that sent a query on such a connection waited for
 * ever and its lane never ran again; now the query fails, the connection
 * is dropped, and the next round works on a fresh one.
 */

let db: TestDatabase;
let proxy: TcpProxy;
let proxied: string;
beforeAll(async () => {
  db = await testDatabase('bounds');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1_000_000, burst: 1_000_000 });
  ({ proxy, url: proxied } = await proxyInFront(db.url));
});
afterAll(async () => {
  await proxy.stop();
  await db.close();
});

describe('bounded waits on the database', () => {
  it('a query on a connection gone silent fails after the query timeout, and the pool carries on with a new connection', async () => {
    const pool = createPool({ connectionString: proxied, max: 1, queryTimeoutMs: 500 });
    try {
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
      expect(proxy.freeze()).toBeGreaterThan(0);
      await expect(pool.query('SELECT 1')).rejects.toThrow(/Query read timeout/);
      // The silent connection was dropped, not handed out again.
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('the delivery lane keeps sending after every connection it had goes silent', async () => {
    const pool = createPool({ connectionString: proxied, max: 3, queryTimeoutMs: 500 });
    const gateway = new ScriptedGateway({ kind: 'accepted', receipt: 'r' });
    // The worker's warnings and errors, for a failure to say what the lane met.
    const logs = new LogCapture();
    const worker = new DeliveryWorker({
      pool,
      schema: db.schema,
      gateway,
      pollIntervalMs: 20,
      from: 'Support <support@leasehold.test>',
      logger: createLogger({ level: 'warn', destination: logs }),
      reclaimIntervalMs: 0,
    });
    worker.start();
    try {
      await insertDueHolds(db.pool, db.schema, 5, { prefix: 'before' });
      await new ExpiryWorker({ pool: db.pool, schema: db.schema, logger: silentLogger }).runOnce();
      await waitForCount(() => countWhere(db.pool, db.schema, 'email_outbox', `state = 'sent' AND id LIKE '%:before-%'`), 5, 10_000, 'sent before');

      expect(proxy.freeze()).toBeGreaterThan(0);
      await insertDueHolds(db.pool, db.schema, 5, { prefix: 'after' });
      await new ExpiryWorker({ pool: db.pool, schema: db.schema, logger: silentLogger }).runOnce();
      await waitForCount(() => countWhere(db.pool, db.schema, 'email_outbox', `state = 'sent' AND id LIKE '%:after-%'`), 5, 20_000, 'sent after', () =>
        intentsAndLog(db.pool, db.schema, '%:after-%', logs.lines),
      );
      expect(gateway.calls.filter((c) => c.message.intentId.includes(':after-'))).toHaveLength(5);
    } finally {
      await worker.stop();
      await pool.end();
    }
  });

  it('a LISTEN session gone silent is noticed by its heartbeat and replaced; wake-ups arrive again', async () => {
    let sessions = 0;
    let lost = 0;
    let wakes = 0;
    const notifier = createPool({ connectionString: db.url, max: 1 });
    const channel = `bounds_${db.schema}`;
    const listener = new Listener(proxied, channel, () => void wakes++, silentLogger, {
      probe: (payload) => notifier.query('SELECT pg_notify($1, $2)', [channel, payload]).then(() => {}),
      onSession: async () => void sessions++,
      onSessionLost: () => void lost++,
      heartbeatMs: 100,
      queryTimeoutMs: 300,
    });
    listener.start();
    try {
      await waitForCount(async () => sessions, 1, 10_000, 'first session');
      const before = wakes;
      await notifier.query('SELECT pg_notify($1, $2)', [channel, 'x']);
      await waitForCount(async () => wakes - before, 1, 5000, 'a wake-up');

      proxy.freeze();
      await waitForCount(async () => sessions, 2, 10_000, 'a second session after the freeze');
      expect(lost).toBe(1);
      const again = wakes;
      await notifier.query('SELECT pg_notify($1, $2)', [channel, 'y']);
      await waitForCount(async () => wakes - again, 1, 5000, 'a wake-up on the new session');
    } finally {
      await listener.stop();
      await notifier.end();
    }
  });
});
