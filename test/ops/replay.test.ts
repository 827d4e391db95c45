import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ident } from '../../src/db/pool.js';
import { IntentStateError, NotFoundError } from '../../src/errors.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { replayIntent } from '../../src/ops/replay.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

/** src/ops/replay.ts: an intent sent again on purpose (moved here from test/tables/outbox.test.ts). */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('ops_replay');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
});
afterAll(() => db.close());

let prefix = 0;
async function expiredIntent(): Promise<{ intentId: string; clock: ManualClock }> {
  await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL WHERE state = 'pending'`);
  const [holdId] = await insertDueHolds(db.pool, db.schema, 1, { prefix: `r${++prefix}` });
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
  return { intentId: `reservation-expired:${holdId}`, clock: new ManualClock(rows[0]!.now) };
}

describe('replayIntent', () => {
  it('sends a finished intent again with a new idempotency key, without touching the hold', async () => {
    const { intentId, clock } = await expiredIntent();
    const gateway = new ScriptedGateway({ kind: 'accepted', receipt: 'ok' }, true);
    const worker = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, clock });
    await worker.runOnce();
    await expect(replayIntent(db.pool, intentId, { schema: db.schema })).resolves.toMatchObject({ state: 'pending', replays: 1 });
    await expect(replayIntent(db.pool, intentId, { schema: db.schema })).rejects.toBeInstanceOf(IntentStateError);
    clock.advance(60_000); // replay makes it due at the database's now
    await worker.runOnce();
    expect(gateway.calls.map((c) => c.message.idempotencyKey)).toEqual([intentId, `${intentId}#replay-1`]);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', attempts: 2 });
    const { rows } = await db.pool.query(`SELECT status FROM ${ident(db.schema)}.support_reservations WHERE id = $1`, [intentId.split(':')[1]]);
    expect(rows[0].status).toBe('expired');
  });

  it('refuses a pending intent, saying it is already going to be sent, and an unknown one as not found', async () => {
    const { intentId } = await expiredIntent();
    const pending = await replayIntent(db.pool, intentId, { schema: db.schema }).catch((error: unknown) => error);
    expect(pending).toBeInstanceOf(IntentStateError);
    expect((pending as Error).message).toBe(`intent ${JSON.stringify(intentId)} is already pending`);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'pending', replays: 0 });
    await expect(replayIntent(db.pool, 'reservation-expired:nobody', { schema: db.schema })).rejects.toBeInstanceOf(NotFoundError);
  });
});
