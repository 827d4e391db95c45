import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/pool.js';
import { NotFoundError } from '../../src/errors.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { Operations } from '../../src/ops/operations.js';
import { auditList } from '../../src/tables/audit-log.js';
import { deliveryControlGet } from '../../src/tables/delivery-control.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';

/**
 * src/ops/operations.ts and tenants.ts: the operator actions the CLI and the
 * API share (each command's and route's own tests are in test/cli/ and
 * test/server/). Here: every change writes its audit entry in its own
 * transaction, or in the caller's.
 */
let db: TestDatabase;
let ops: Operations;
beforeAll(async () => {
  db = await testDatabase('ops_operations');
  ops = new Operations({ pool: db.pool, schema: db.schema, initialRate: { perSecond: 5, burst: 5 } }).as({ name: 'test:ana' });
});
afterAll(() => db.close());

const entries = async () => (await auditList(db.pool, db.schema, { limit: 50 })).entries;

describe('operator actions, each audited in the same transaction as its change', () => {
  it('pause and resume: the fleet changes, and each writes one entry naming the actor, before and after', async () => {
    await ops.pause({ reason: 'ops test', forSeconds: 60 });
    expect(await deliveryControlGet(db.pool, db.schema)).toMatchObject({ paused: true, reason: 'ops test' });
    await ops.resume();
    expect((await deliveryControlGet(db.pool, db.schema)).paused).toBe(false);
    const [resume, pause] = await entries();
    expect(pause).toMatchObject({ actor: 'test:ana', action: 'delivery.pause', target: 'fleet', before: { paused: false }, after: { paused: true, reason: 'ops test' } });
    expect(resume).toMatchObject({ actor: 'test:ana', action: 'delivery.resume', target: 'fleet', before: { paused: true }, after: { paused: false } });
  });

  it("on a client inside the caller's transaction, a rollback takes the change and its entry back together", async () => {
    const before = (await entries()).length;
    await expect(
      withTransaction(db.pool, async (client) => {
        await new Operations({ pool: client, schema: db.schema, initialRate: { perSecond: 5, burst: 5 } }).pause({ reason: 'rolled back' });
        throw new Error('the application changed its mind');
      }),
    ).rejects.toThrow('the application changed its mind');
    expect((await deliveryControlGet(db.pool, db.schema)).paused).toBe(false);
    expect(await entries()).toHaveLength(before);
  });

  it("replay given a hold's id names that hold's intents, and changes nothing", async () => {
    const [holdId] = await insertDueHolds(db.pool, db.schema, 1, { prefix: 'ops-hint' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const before = (await entries()).length;
    const error = await ops.replay(holdId!).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toContain(`did you mean reservation-expired:${holdId}?`);
    expect(await entries()).toHaveLength(before);
  });

  it('a tenant pause and resume are audited the same way; resuming a tenant not paused is not found', async () => {
    await ops.tenants.pause('acme', 'noisy neighbour');
    await ops.tenants.resume('acme');
    const [resume, pause] = await entries();
    expect([pause!.action, pause!.target, pause!.actor]).toEqual(['tenant.pause', 'acme', 'test:ana']);
    expect([resume!.action, resume!.target]).toEqual(['tenant.resume', 'acme']);
    await expect(ops.tenants.resume('acme')).rejects.toBeInstanceOf(NotFoundError);
  });
});
