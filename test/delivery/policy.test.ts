import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('policy');
});
afterAll(() => db.close());

describe('rate-limit policy changed at run time', () => {
  it('running workers obey a lower rate within a second, with no deploy', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 100, burst: 10 });
    await insertDueHolds(db.pool, db.schema, 400);
    const expiry = new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 1000 });
    await expiry.runOnce();
    const workers = [0, 1].map(
      () => new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway: new SandboxGateway(), concurrency: 10 }),
    );
    workers.forEach((w) => w.start());
    try {
      // Sending at the higher rate first (waited for by count, not by time, so a slow machine cannot fail it).
      const sentSoFar = async () =>
        (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE state = 'sent'`)).rows[0]!.n;
      await expect.poll(sentSoFar, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(60);
      const { rows } = await db.pool.query<{ t: number }>('SELECT extract(epoch FROM now())::float8 AS t');
      const changedAt = rows[0]!.t;
      await rateLimiterSet(db.pool, db.schema, { perSecond: 10, burst: 2 });
      await new Promise((r) => setTimeout(r, 3000));
      const sent = await db.pool.query<{ t: number }>(
        `SELECT extract(epoch FROM sent_at)::float8 AS t FROM ${ident(db.schema)}.email_outbox WHERE state = 'sent' ORDER BY sent_at`,
      );
      const times = sent.rows.map((r) => r.t);
      const before = times.filter((t) => t <= changedAt).length;
      const afterGrace = times.filter((t) => t > changedAt + 1 && t <= changedAt + 3).length;
      expect(before).toBeGreaterThanOrEqual(60); // at 100/s before the change
      // From a second after the change: at most burst + 10/s * 2 s.
      expect(afterGrace).toBeLessThanOrEqual(2 + 10 * 2 + 1);
      expect(afterGrace).toBeGreaterThanOrEqual(15);
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
  });
});
