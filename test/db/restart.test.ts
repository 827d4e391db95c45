import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, ident } from '../../src/db/pool.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';

// This file restarts its database, so it runs its own embedded server
// rather than the one the rest of the suite shares.
let dir: string;
let server: EmbeddedPostgres;
let port: number;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'leasehold-restart-'));
  server = await startEmbeddedPostgres({ dataDir: dir });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('database restart', () => {
  it('workers ride out a PostgreSQL restart and lose nothing', async () => {
    const schema = 'restart';
    const pool = createPool({ connectionString: server.url, max: 6 });
    await migrate(pool, schema);
    await rateLimiterSet(pool, schema, { perSecond: 500, burst: 50 });
    const s = ident(schema);
    const seed = (prefix: string, n: number) =>
      pool.query(
        `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash)
         SELECT $1 || i, 'c' || i || '@example.com', now() - interval '1 second', 'seed' FROM generate_series(1, $2::int) i`,
        [prefix, n],
      );
    const gateway = new SandboxGateway();
    const expiry = new ExpiryWorker({ pool, schema, intervalMs: 50, batchSize: 20 });
    const delivery = new DeliveryWorker({ pool, schema, gateway, pollIntervalMs: 50, concurrency: 20 });
    expiry.start();
    delivery.start();
    try {
      await seed('before-', 100);
      const sent = async () =>
        (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE state = 'sent'`)).rows[0]!.n;
      await waitFor(async () => (await sent()) === 100, 'first sends recorded', 10_000);

      await server.stop();
      await new Promise((r) => setTimeout(r, 500)); // workers fail and back off meanwhile
      server = await startEmbeddedPostgres({ dataDir: dir, port });

      await waitFor(async () => (await seed('after-', 100), true), 'reconnect', 10_000);
      await waitFor(async () => (await sent()) === 200, 'sends after restart recorded', 20_000);
      const { rows } = await pool.query<{ status: string; state: string; n: number }>(
        `SELECT r.status, o.state, count(*)::int AS n
           FROM ${s}.support_reservations r LEFT JOIN ${s}.email_outbox o ON o.reservation_id = r.id
          GROUP BY 1, 2`,
      );
      expect(rows).toEqual([{ status: 'expired', state: 'sent', n: 200 }]);
      // Each intent was accepted once: nothing was in flight when the server stopped.
      expect(gateway.accepted).toHaveLength(200);
      expect(new Set(gateway.accepted.map((a) => a.intentId)).size).toBe(200);
    } finally {
      await expiry.stop();
      await delivery.stop();
      await pool.end();
    }
  }, 60_000);
});
