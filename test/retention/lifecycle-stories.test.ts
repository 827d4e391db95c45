import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { confirmHold, createHold, extendHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { silentLogger } from '../../src/observability/logger.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { Pruner } from '../../src/retention/prune.js';
import { eraseAddress } from '../../src/retention/erase.js';
import { DEFAULT_RETENTION } from '../../src/model/retention-policy.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

/**
 * Retention and erasure reach every intent of a hold's life (migration
 * 0024: a reminder, the expiry email, a confirmation) and its extensions:
 * a story is pruned whole, every intent with it, and only once every one
 * of them has finished; an erasure clears the address on all of them.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('lifecycle_retention');
});
afterAll(() => db.close());

describe('retention and erasure of a whole life', () => {
  it('prunes stories with several intents whole, never one with a pending reminder, and erases the address on every intent', async () => {
    const s = ident(db.schema);
    const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
    const clock = new ManualClock(rows[0]!.now);
    const opts = { schema: db.schema, clock };
    const gateway = new ScriptedGateway();
    const delivery = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, clock, logger: silentLogger, from: 'Shop <shop@example.com>', initialRate: { perSecond: 1000, burst: 1000 } });
    const expiry = new ExpiryWorker({ pool: db.pool, schema: db.schema, clock, logger: silentLogger });

    // confirmed: reminder voided, confirmation sent. expired: reminder sent, expiry email sent, one extension.
    await createHold(db.pool, { id: 'confirmed', customerEmail: 'ana@example.com', ttlSeconds: 600, remindBeforeSeconds: 300, notifyOnConfirm: true }, opts);
    await createHold(db.pool, { id: 'expired', customerEmail: 'ana@example.com', ttlSeconds: 600, remindBeforeSeconds: 300 }, opts);
    await createHold(db.pool, { id: 'still-held', customerEmail: 'bo@example.com', ttlSeconds: 3 * 86400, remindBeforeSeconds: 300 }, opts);
    await confirmHold(db.pool, 'confirmed', opts);
    await extendHold(db.pool, 'expired', { ttlSeconds: 900 }, opts);
    const step = async (minutes: number) => {
      clock.advance(minutes * 60_000);
      await expiry.runOnce();
      await delivery.runOnce();
    };
    await step(10); // the extended hold's reminder (5 min before its 15)
    await step(6); // it expires

    const states = async () =>
      (await db.pool.query(`SELECT id, state, recipient FROM ${s}.email_outbox ORDER BY id`)).rows.map((r) => `${r.id} ${r.state} ${r.recipient ?? '-'}`);
    expect(await states()).toEqual([
      'reservation-confirmed:confirmed sent ana@example.com',
      'reservation-expired:expired sent ana@example.com',
      'reservation-reminder:confirmed voided ana@example.com',
      'reservation-reminder:expired sent ana@example.com',
      'reservation-reminder:still-held pending bo@example.com',
    ]);

    // Erasure on request: the address leaves every intent of both stories.
    const erased = await eraseAddress(db.pool, 'ana@example.com', { schema: db.schema, logger: silentLogger });
    expect(erased.counts.support_reservations).toBe(2);
    expect(erased.counts.email_outbox).toBe(4);
    expect((await states()).filter((line) => line.includes('ana@example.com'))).toEqual([]);

    // Forty days on, both finished stories go, with every intent and the extension; the held hold's pending reminder stays.
    const later = { now: () => new Date(clock.now().getTime() + 40 * 86_400_000) };
    const run = await new Pruner({ pool: db.pool, schema: db.schema, policy: { ...DEFAULT_RETENTION, erasePiiAfterDays: null }, clock: later }).runUntilDone();
    expect(run.complete).toBe(true);
    expect(run.pruned.support_reservations).toBe(2);
    expect(run.pruned.email_outbox).toBe(4);
    expect(await states()).toEqual(['reservation-reminder:still-held pending bo@example.com']);
    const { rows: extensions } = await db.pool.query(`SELECT count(*)::int AS n FROM ${s}.hold_extensions`);
    expect(extensions[0].n).toBe(0);
  });
});
