import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createHold } from '../../src/holds/holds.js';
import { replayIntent } from '../../src/ops/replay.js';
import { holdTimeline } from '../../src/read/timeline.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('read_timeline');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
});
afterAll(() => db.close());

describe("a hold's life, as trace and the dashboard tell it", () => {
  it('each send counts the attempts it took: the first send its own, a replay only those since', async () => {
    const id = 'tl-replay';
    const intentId = `reservation-expired:${id}`;
    await createHold(db.pool, { id, customerEmail: 'tl@example.com', ttlSeconds: 60 }, { schema: db.schema });
    await db.pool.query(`UPDATE ${ident(db.schema)}.support_reservations SET expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
    const clock = new ManualClock(rows[0]!.now);
    // A refused connection, then accepted: the first send took two attempts.
    const gateway = new ScriptedGateway().script(intentId, { kind: 'failed', reason: 'connection refused', outcomeUnknown: false }, { kind: 'accepted', receipt: 'r' });
    const worker = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, clock, random: () => 0.5 });
    await worker.runOnce();
    clock.advance(3600_000);
    await worker.runOnce();
    await replayIntent(db.pool, intentId, { schema: db.schema });
    clock.advance(1_000);
    await worker.runOnce();
    expect(gateway.calls).toHaveLength(3);

    const { life } = await holdTimeline(db.pool, db.schema, id);
    const sends = life.filter((e) => e.what.startsWith('expiry email sent'));
    expect(sends.map((e) => [e.what, e.detail])).toEqual([
      ['expiry email sent', 'after 2 attempts'],
      ['expiry email sent again (replay 1)', 'after 1 attempt'],
    ]);
  });
});
