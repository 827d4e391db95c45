import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { batchesBegin, batchesCloseStale } from '../../src/tables/batches.js';
import { intentsLease } from '../../src/tables/outbox.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { expireHolds } from '../helpers/provider-e2e.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('batches_table');
});
afterAll(() => db.close());

const lease = (token: string, extra: Partial<Parameters<typeof intentsLease>[2]> = {}) =>
  intentsLease(db.pool, db.schema, { limit: 100, leaseMs: 30_000, token, provider: 'resend', now: null, ...extra });

describe('email_batches', () => {
  it('a batch takes only the members still leased under the round token, in request order', async () => {
    const ids = await expireHolds(db, 'tb-fence', 3);
    const token = randomUUID();
    await lease(token);
    // One member's lease was lost (reclaimed and leased by another worker).
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET lease_token = gen_random_uuid() WHERE id = $1`, [ids[1]]);
    const members = await batchesBegin(db.pool, db.schema, { id: randomUUID(), account: 'default', provider: 'resend', members: [ids[2]!, ids[1]!, ids[0]!], token, bind: true });
    expect(members).toEqual([ids[2], ids[0]]);
  });

  it('an open batch is leased whole or not at all, and not one by one', async () => {
    const ids = await expireHolds(db, 'tb-whole', 3);
    const token = randomUUID();
    await lease(token);
    const id = randomUUID();
    await batchesBegin(db.pool, db.schema, { id, account: 'default', provider: 'resend', members: ids, token, bind: true });
    // The lease expires with its outcome unknown.
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET lease_expires_at = now() - interval '1 ms' WHERE id = ANY ($1)`, [ids]);
    expect(await lease(randomUUID())).toEqual([]); // the single lease skips bound members
    // While one member is not due, the batch is not due.
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET available_at = now() + interval '1 hour' WHERE id = $1`, [ids[0]]);
    expect(await lease(randomUUID(), { batches: { emails: 100 } })).toEqual([]);
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET available_at = now() WHERE id = $1`, [ids[0]]);
    // A budget below its size leaves it for later.
    expect(await lease(randomUUID(), { batches: { emails: 2 } })).toEqual([]);
    const whole = await lease(randomUUID(), { batches: { emails: 100 } });
    expect(whole.map((i) => [i.id, i.batchId, i.batchPosition]).sort()).toEqual(ids.map((m, i) => [m, id, i]).sort());
    expect(whole.every((i) => i.previousOutcomeUnknown)).toBe(true);
  });

  it('a stale open batch (past its key lifetime, or with a member gone) unbinds its members, flagged', async () => {
    const ids = await expireHolds(db, 'tb-stale', 2);
    const token = randomUUID();
    await lease(token);
    const id = randomUUID();
    await batchesBegin(db.pool, db.schema, { id, account: 'default', provider: 'resend', members: ids, token, bind: true });
    expect(await batchesCloseStale(db.pool, db.schema, 'default', 3_600_000)).toBe(0);
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_batches SET created_at = now() - interval '2 hours' WHERE id = $1`, [id]);
    expect(await batchesCloseStale(db.pool, db.schema, 'default', 3_600_000)).toBe(1);
    const { rows } = await db.pool.query(`SELECT batch_id, moved_unsettled FROM ${ident(db.schema)}.email_outbox WHERE id = ANY ($1)`, [ids]);
    expect(rows).toEqual([
      { batch_id: null, moved_unsettled: true },
      { batch_id: null, moved_unsettled: true },
    ]);
    const { rows: batch } = await db.pool.query(`SELECT open FROM ${ident(db.schema)}.email_batches WHERE id = $1`, [id]);
    expect(batch).toEqual([{ open: false }]);
  });
});
