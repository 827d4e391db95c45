import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, ident } from '../../src/db/pool.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { silentLogger } from '../../src/observability/logger.js';
import type { SendResult } from '../../src/providers/gateway.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countWhere, waitForCount } from '../helpers/fleet.js';
import { insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';
import { proxyInFront, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A round whose record is lost with its connection (a restart or a purge
 * between the sends and the record) keeps its results and records them
 * before its next round: the outcomes are known, so nothing waits out its
 * lease and nothing is sent a second time.
 */
let db: TestDatabase;
let proxy: TcpProxy;
let proxied: string;
beforeAll(async () => {
  db = await testDatabase('deferred');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1_000_000, burst: 1_000_000 });
  ({ proxy, url: proxied } = await proxyInFront(db.url));
});
afterAll(async () => {
  await proxy.stop();
  await db.close();
});

describe('a record lost with its connection', () => {
  it('is made again before the next round: every intent sent once, one attempt each, none left to its lease', async () => {
    const pool = createPool({ connectionString: proxied, max: 4 });
    await insertDueHolds(db.pool, db.schema, 4, { prefix: 'lost' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema, logger: silentLogger }).runOnce();
    let purged = false;
    // The first sends end with the database gone for the worker: its record then fails.
    const gateway = new ScriptedGateway(async (): Promise<SendResult> => {
      if (!purged) {
        purged = true;
        proxy.cut();
      }
      return { kind: 'accepted', receipt: 'r' };
    });
    const worker = new DeliveryWorker({
      pool,
      schema: db.schema,
      gateway,
      batchSize: 4,
      concurrency: 4,
      pollIntervalMs: 20,
      leaseMs: 60_000,
      from: 'Support <support@leasehold.test>',
      logger: silentLogger,
      reclaimIntervalMs: 0,
    });
    const failedRound = await worker.runOnce().catch((error: unknown) => error as Error);
    expect(failedRound).toBeInstanceOf(Error);
    expect(await countWhere(db.pool, db.schema, 'email_outbox', `state = 'sent'`)).toBe(0);

    proxy.restore();
    worker.start();
    try {
      await waitForCount(() => countWhere(db.pool, db.schema, 'email_outbox', `state = 'sent' AND NOT possible_duplicate`), 4, 10_000, 'recorded');
    } finally {
      await worker.stop();
      await pool.end();
    }
    expect(gateway.calls).toHaveLength(4);
    const s = ident(db.schema);
    const { rows } = await db.pool.query<{ outcome: string; n: number }>(`SELECT outcome, count(*)::int AS n FROM ${s}.email_attempts GROUP BY 1`);
    expect(rows).toEqual([{ outcome: 'accepted', n: 4 }]);
  });
});
