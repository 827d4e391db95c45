import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ident, withClient } from '../src/db/pool.js';
import { intentsChannel } from '../src/db/listener.js';
import { silentLogger } from '../src/observability/logger.js';
import { prepareService, startService } from '../src/service.js';
import { testDatabase, type TestDatabase } from './helpers/database.js';
import { insertDueHolds } from './helpers/holds.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('service');
});
afterAll(() => db.close());

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every wake-up of the delivery lane from now on, each as the stack that called it. */
function recordWakes(delivery: { wake(): void }): string[] {
  const wakes: string[] = [];
  const wake = delivery.wake.bind(delivery);
  delivery.wake = () => {
    wakes.push(new Error().stack ?? '');
    wake();
  };
  return wakes;
}

describe('the composition root', () => {
  it('wakes the delivery lane of the same process when an expiry batch with intents commits, without the NOTIFY', async () => {
    // LISTEN off: only the in-process wake (or the 1 s poll) can wake the lane; the hand-off off, or it would need none.
    const config = loadConfig({ ...db.env, LEASEHOLD_LISTEN: 'off', LEASEHOLD_EXPIRY_INTERVAL_MS: '50', LOG_LEVEL: 'silent', LEASEHOLD_HAND_OFF: 'off' });
    const prepared = await prepareService(config, { expiry: true, delivery: true });
    const service = await startService(prepared, { pool: db.pool, schema: db.schema, logger: silentLogger }, { databaseUrl: db.url });
    try {
      const wakes = recordWakes(service.delivery!);
      await insertDueHolds(db.pool, db.schema, 3, { prefix: 'woken' });
      const count = async (sql: string) => (await db.pool.query<{ n: number }>(sql)).rows[0]!.n;
      await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE reservation_id LIKE 'woken-%' AND state = 'sent'`)) === 3, 'the three emails sent');
      expect(wakes.length).toBeGreaterThanOrEqual(1);
    } finally {
      await service.stop();
    }
  });

  /**
   * A service of both lanes, with this test LISTENing on the intents
   * channel: once its listener is checked, three holds fall due and are
   * sent; then `check` sees every payload heard and every wake-up since the
   * holds were inserted.
   */
  async function sendThree(env: Record<string, string>, prefix: string, check: (heard: { payloads: string[]; wakes: string[] }) => Promise<void>): Promise<void> {
    const config = loadConfig({ ...db.env, LEASEHOLD_EXPIRY_INTERVAL_MS: '50', LOG_LEVEL: 'silent', ...env });
    const prepared = await prepareService(config, { expiry: true, delivery: true });
    const payloads: string[] = [];
    await withClient(db.pool, async (session) => {
      session.on('notification', (m) => void payloads.push(m.payload ?? ''));
      await session.query(`LISTEN ${ident(intentsChannel(db.schema))}`);
      const service = await startService(prepared, { pool: db.pool, schema: db.schema, logger: silentLogger }, { databaseUrl: db.url });
      try {
        const wakes = recordWakes(service.delivery!);
        // The service's listener is checked once its test notification has come (and woken the lane once).
        await waitFor(async () => payloads.some((p) => p.startsWith('probe:')) && wakes.length > 0, 'the listener checked');
        wakes.length = 0;
        await insertDueHolds(db.pool, db.schema, 3, { prefix });
        const count = async (sql: string) => (await db.pool.query<{ n: number }>(sql)).rows[0]!.n;
        await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE reservation_id LIKE '${prefix}-%' AND state = 'sent'`)) === 3, 'the three emails sent');
        await check({ payloads, wakes });
      } finally {
        await service.stop();
        await session.query('UNLISTEN *');
      }
    });
  }

  it("leaves its own expiry lane's NOTIFY unanswered (the lane beside it was woken at the commit) and names itself in it", async () => {
    // Without the hand-off, which would lease the batch in its statement: no NOTIFY, no wake-up (next test).
    await sendThree({ LEASEHOLD_HAND_OFF: 'off' }, 'own', async ({ payloads, wakes }) => {
      // The batch's NOTIFY names this process, and has reached the listeners (this test's, and the service's at the same moment).
      await waitFor(async () => payloads.some((p) => p.startsWith('process:')), "the expiry batch's NOTIFY");
      await new Promise((r) => setTimeout(r, 300));
      // One wake-up for the batch: the in-process one. The NOTIFY coming back would be a second (a round that leases nothing).
      expect(wakes, wakes.join('\n---\n')).toHaveLength(1);
      expect(wakes[0]).toContain('intentsCommitted');
    });
  });

  it('hands its expiry batches to the delivery lane beside it: sent with no NOTIFY and no wake-up', async () => {
    expect(loadConfig(db.env).handOff).toBe(true);
    await sendThree({}, 'handed', async ({ payloads, wakes }) => {
      await new Promise((r) => setTimeout(r, 300));
      expect(payloads.filter((p) => p.startsWith('process:'))).toEqual([]);
      expect(wakes, wakes.join('\n---\n')).toHaveLength(0);
    });
  });

  it('wires no wake-up where the process runs the expiry lane alone', async () => {
    const config = loadConfig({ ...db.env, LEASEHOLD_LISTEN: 'off', LEASEHOLD_EXPIRY_INTERVAL_MS: '50', LOG_LEVEL: 'silent' });
    const prepared = await prepareService(config, { expiry: true });
    const service = await startService(prepared, { pool: db.pool, schema: db.schema, logger: silentLogger }, { databaseUrl: db.url });
    try {
      expect(service.delivery).toBeUndefined();
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'alone' });
      await waitFor(
        async () => (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE reservation_id LIKE 'alone-%'`)).rows[0]!.n === 2,
        'the two intents written',
      );
    } finally {
      await service.stop();
    }
  });
});
