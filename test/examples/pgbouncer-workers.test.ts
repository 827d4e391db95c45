import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool, withTransaction } from '../../src/db/pool.js';
import { createHold } from '../../src/holds/holds.js';
import { testDatabase } from '../helpers/database.js';
import { countWhere, logEvents, waitForCount } from '../helpers/fleet.js';
import { pgbouncerBinary, startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { startNode } from '../helpers/processes.js';

/**
 * examples/pgbouncer-workers: its two processes behind a real PgBouncer in
 * transaction mode (the same helper as test/db/pgbouncer.test.ts; Debian's
 * `pgbouncer` package, which .ci/run installs). Without the binary the test
 * is skipped and says so in its name.
 */
const workers = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/pgbouncer-workers/workers.ts');
const binary = pgbouncerBinary();
const skipped = binary ? '' : ' [SKIPPED: pgbouncer not installed; apt-get install pgbouncer]';

let bouncer: PgBouncer;
beforeAll(async () => {
  if (binary) bouncer = await startPgBouncer(inject('databaseUrl'), { poolMode: 'transaction', serverPoolSize: 4 });
});
afterAll(async () => {
  await bouncer?.stop();
});

describe.skipIf(!binary)(`examples/pgbouncer-workers${skipped}`, () => {
  it('holds created through the bouncer in the application transaction expire and are emailed once; SIGTERM stops both processes cleanly', async () => {
    const db = await testDatabase('ex_bouncer');
    const app = createPool({ connectionString: bouncer.url, max: 2 });
    const env = { ...db.env, DATABASE_URL: bouncer.url, LOG_LEVEL: 'info', LEASEHOLD_EXPIRY_INTERVAL_MS: '100' };
    const child = startNode(workers, [], env);
    try {
      const running = () => (child.stdout().match(/lane running/g) ?? []).length;
      for (const deadline = Date.now() + 45_000; running() < 2; await new Promise((r) => setTimeout(r, 100))) {
        if (Date.now() > deadline || child.process.exitCode !== null) throw new Error(`workers did not start:\n${child.stdout()}\n${child.stderr().slice(-3000)}`);
      }
      const ids = Array.from({ length: 6 }, (_, i) => `bouncer-${i}`);
      await withTransaction(app, async (client) => {
        for (const id of ids) await createHold(client, { id, customerEmail: `${id}@example.com`, ttlSeconds: 1 }, { schema: db.schema });
      });
      await waitForCount(() => countWhere(db.pool, db.schema, 'email_outbox', `state = 'sent'`), ids.length, 20_000, 'intents sent');
      expect(await countWhere(db.pool, db.schema, 'support_reservations', `status = 'expired'`)).toBe(ids.length);
      // The delivery worker finds LISTEN deaf behind the bouncer, once, and polls
      // (its test NOTIFY is given 5 s).
      await expect.poll(() => logEvents(child.stderr(), 'listener.unavailable').length, { timeout: 15_000 }).toBe(1);
      child.process.kill('SIGTERM');
      expect((await child.exited).code, child.stderr().slice(-2000)).toBe(0);
    } finally {
      if (child.process.exitCode === null) child.process.kill('SIGKILL');
      await child.exited;
      await app.end();
      await db.close();
    }
  }, 90_000);
});
