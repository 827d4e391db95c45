import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident, withTransaction } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { eraseAddress } from '../../src/retention/erase.js';
import { storiesErase, storiesPrune } from '../../src/retention/queries.js';
import { laneStats } from '../../src/read/stats.js';
import { intentsLease, intentsRecord, intentsReplay, type LeasedIntent } from '../../src/tables/outbox.js';
import type { AttemptOutcome } from '../../src/model/intent-states.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countBy, insertDueHolds } from '../helpers/holds.js';
import { attemptResult, leaseAndRecord } from '../helpers/rounds.js';

/**
 * email_outbox_counts is written only by the triggers of migration 0012. The
 * counts must equal a GROUP BY over the outbox after every kind of statement
 * that changes intents, including statements of several workers at once.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('intent_counts');
});
afterAll(() => db.close());

async function expectExact() {
  // Read as status, health and metrics read them: the lane snapshot.
  const counted = (await laneStats(db.pool, db.schema)).delivery.intentsByState;
  const actual = { pending: 0, sent: 0, rejected: 0, dead: 0, voided: 0, missed_deadline: 0, ...(await countBy(db.pool, db.schema, 'email_outbox', 'state')) };
  expect(counted).toEqual(actual);
  return counted;
}

const lease = (limit: number, now: Date | null = null) =>
  intentsLease(db.pool, db.schema, { limit, leaseMs: 30_000, token: randomUUID(), provider: 'test', now });

const result = attemptResult;

/** Lease up to `limit` and record `outcomeOf(i)` for each, as one worker round does. */
const round = (limit: number, outcomeOf: (i: number, intent: LeasedIntent) => AttemptOutcome, maxAttempts = 3) =>
  leaseAndRecord(db.pool, db.schema, limit, outcomeOf, { maxAttempts });

async function expireDue(prefix: string, count: number): Promise<void> {
  await insertDueHolds(db.pool, db.schema, count, { prefix });
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
}

describe('intent counts stay exact', () => {
  it('the migration seeds and the expiry statement counts its inserts', async () => {
    expect(await expectExact()).toEqual({ pending: 0, sent: 0, rejected: 0, dead: 0, voided: 0, missed_deadline: 0 });
    await expireDue('expire', 40);
    expect(await expectExact()).toMatchObject({ pending: 40 });
  });

  it('lease alone changes nothing; every outcome of record moves the right counts', async () => {
    await lease(10);
    expect(await expectExact()).toMatchObject({ pending: 40 });
    // The leases above expire later; lease the other 30 and record a mix.
    const outcomes: AttemptOutcome[] = ['accepted', 'rejected', 'failed', 'rate_limited', 'paused', 'abandoned'];
    await round(30, (i) => outcomes[i % outcomes.length]!, 1);
    // maxAttempts 1: failed goes dead; rate_limited, paused and abandoned stay pending.
    expect(await expectExact()).toEqual({ pending: 10 + 15, sent: 5, rejected: 5, dead: 5, voided: 0, missed_deadline: 0 });
  });

  it('an expired lease leased again, an acceptance of an intent already sent, and a fenced result', async () => {
    const later = new Date(Date.now() + 60_000);
    const token = randomUUID();
    const leased = await intentsLease(db.pool, db.schema, { limit: 100, leaseMs: 30_000, token, provider: 'test', now: later });
    expect(leased.length).toBe(25);
    await intentsRecord(db.pool, db.schema, leased.map((intent) => result(intent, token, 'accepted')), { maxAttempts: 3, now: later });
    expect(await expectExact()).toEqual({ pending: 0, sent: 30, rejected: 5, dead: 5, voided: 0, missed_deadline: 0 });
    // The same acceptances again (a stale worker's report): a fact, recorded, flagged; no state moves.
    await intentsRecord(db.pool, db.schema, leased.map((intent) => result(intent, token, 'accepted')), { maxAttempts: 3, now: later });
    // A failure under a lease no longer held is fenced: nothing changes.
    await intentsRecord(db.pool, db.schema, leased.map((intent) => result(intent, token, 'failed')), { maxAttempts: 1, now: later });
    expect(await expectExact()).toEqual({ pending: 0, sent: 30, rejected: 5, dead: 5, voided: 0, missed_deadline: 0 });
  });

  it('replay moves a finished intent back to pending', async () => {
    const { rows } = await db.pool.query<{ id: string; state: string }>(
      `SELECT DISTINCT ON (state) id, state FROM ${ident(db.schema)}.email_outbox WHERE state <> 'pending' ORDER BY state, id`,
    );
    for (const row of rows) expect(await intentsReplay(db.pool, db.schema, row.id)).toBe(true);
    expect(await expectExact()).toEqual({ pending: 3, sent: 29, rejected: 4, dead: 4, voided: 0, missed_deadline: 0 });
    await round(10, () => 'accepted');
    expect(await expectExact()).toEqual({ pending: 0, sent: 32, rejected: 4, dead: 4, voided: 0, missed_deadline: 0 });
  });

  it('erasing an address rejects its pending intent; erase and prune batches count what they change and delete', async () => {
    await expireDue('erase-me', 3);
    expect(await expectExact()).toMatchObject({ pending: 3 });
    await eraseAddress(db.pool, 'customer+erase-me-1@example.com', { schema: db.schema });
    expect(await expectExact()).toEqual({ pending: 2, sent: 32, rejected: 5, dead: 4, voided: 0, missed_deadline: 0 });

    const future = new Date(Date.now() + 30 * 86_400_000);
    await withTransaction(db.pool, (client) => storiesErase(client, db.schema, { now: future, days: 1, limit: 1000 }));
    expect(await expectExact()).toEqual({ pending: 2, sent: 32, rejected: 5, dead: 4, voided: 0, missed_deadline: 0 });
    const pruned = await withTransaction(db.pool, (client) => storiesPrune(client, db.schema, { now: future, days: 1, limit: 1000 }));
    expect(pruned.counts.email_outbox).toBe(41);
    // The two pending stories are kept (invariant 12), and counted.
    expect(await expectExact()).toEqual({ pending: 2, sent: 0, rejected: 0, dead: 0, voided: 0, missed_deadline: 0 });
  });

  it('a transaction rolled back takes its counts with it', async () => {
    await withTransaction(db.pool, async (client) => {
      await client.query(`UPDATE ${ident(db.schema)}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL, lease_expires_at = NULL`);
      throw new Error('roll back');
    }).catch(() => {});
    expect(await expectExact()).toEqual({ pending: 2, sent: 0, rejected: 0, dead: 0, voided: 0, missed_deadline: 0 });
  });

  it('TRUNCATE (cascaded from the holds) empties the counts', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.support_reservations CASCADE`);
    expect(await expectExact()).toEqual({ pending: 0, sent: 0, rejected: 0, dead: 0, voided: 0, missed_deadline: 0 });
  });

  it('several workers leasing and recording at once, with expiry running beside them', async () => {
    await expireDue('busy-a', 2000);
    const outcomes: AttemptOutcome[] = ['accepted', 'accepted', 'accepted', 'failed', 'rejected', 'rate_limited'];
    const worker = async (w: number) => {
      let total = 0;
      for (;;) {
        // A second attempt is always accepted: a retried intent cannot keep
        // landing on a rate-limited position and keep the last worker busy.
        const n = await round(50, (i, intent) => (intent.attempts > 1 ? 'accepted' : outcomes[(i + w) % outcomes.length]!), 1);
        total += n;
        if (n === 0) return total;
      }
    };
    const expiring = (async () => {
      for (let i = 0; i < 5; i++) await expireDue(`busy-b${i}`, 200);
    })();
    await Promise.all([...Array.from({ length: 8 }, (_, w) => worker(w)), expiring]);
    // Every worker has seen an empty outbox; a rate-limited retry may have come back after that.
    while ((await round(200, () => 'accepted')) > 0);
    const counts = await expectExact();
    expect(counts.pending).toBe(0);
    expect(counts.sent + counts.rejected + counts.dead).toBe(3000);
    // The workers really spread over several shards (one per backend).
    const { rows } = await db.pool.query<{ shards: number }>(
      `SELECT count(DISTINCT shard)::int AS shards FROM ${ident(db.schema)}.email_outbox_counts WHERE n <> 0`,
    );
    expect(rows[0]!.shards).toBeGreaterThan(1);
  });
});
