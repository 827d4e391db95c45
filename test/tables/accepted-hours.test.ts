import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident, withTransaction } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { storiesPrune } from '../../src/retention/queries.js';
import { ACCEPTED_HOURS_KEPT, acceptedInWindow } from '../../src/tables/accepted-hours.js';
import { EVENT_WINDOW_HOURS } from '../../src/read/event-metrics.js';
import { intentsLease, intentsRecord, type LeasedIntent } from '../../src/tables/outbox.js';
import type { AttemptOutcome } from '../../src/model/intent-states.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { attemptResult, leaseAndRecord } from '../helpers/rounds.js';

/**
 * email_accepted_hours is written only by the triggers of migration 0016.
 * Each window it answers must equal a count of the accepted attempts over
 * the same whole UTC hours, after every kind of statement that writes
 * attempts, including several workers at once.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('accepted_hours');
});
afterAll(() => db.close());

const s = () => ident(db.schema);

async function countedBySql(hours: number): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${s()}.email_attempts
      WHERE outcome = 'accepted' AND finished_at >= date_trunc('hour', now(), 'UTC') - make_interval(hours => $1 - 1)`,
    [hours],
  );
  return rows[0]!.n;
}

/** The windows of 1, 24 and 47 hours agree with a count of the attempts; returns the 24 h one. */
async function expectExact(): Promise<number> {
  for (const hours of [1, 24, ACCEPTED_HOURS_KEPT]) expect(await acceptedInWindow(db.pool, db.schema, hours), `${hours} h`).toBe(await countedBySql(hours));
  return acceptedInWindow(db.pool, db.schema, 24);
}

const result = attemptResult;

/** Lease up to `limit` and record `outcomeOf(i)` for each (maxAttempts 1), as one worker round does. */
const round = (limit: number, outcomeOf: (i: number, intent: LeasedIntent) => AttemptOutcome) =>
  leaseAndRecord(db.pool, db.schema, limit, outcomeOf, { maxAttempts: 1 });

async function expireDue(prefix: string, count: number): Promise<void> {
  await insertDueHolds(db.pool, db.schema, count, { prefix });
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
}

describe('accepted sends per hour stay exact', () => {
  it('starts at zero; a lease alone and results other than accepted count nothing', async () => {
    expect(await expectExact()).toBe(0);
    await expireDue('mixed', 30);
    const outcomes: AttemptOutcome[] = ['rejected', 'failed', 'rate_limited', 'paused', 'abandoned'];
    await round(30, (i) => outcomes[i % outcomes.length]!);
    expect(await expectExact()).toBe(0);
  });

  it('acceptances count in the hour they finished, also one arriving after its lease expired', async () => {
    const before = await expectExact();
    await expireDue('acc', 20);
    const accepted = await round(100, () => 'accepted'); // the 20 new, and the retries left pending above
    expect(accepted).toBeGreaterThanOrEqual(20);
    expect(await expectExact()).toBe(before + accepted);
    // A lease that expires, then the stale worker's acceptance: the attempt,
    // first closed as lease_expired by the next lease, becomes accepted.
    await expireDue('late', 1);
    const token = randomUUID();
    const [stale] = await intentsLease(db.pool, db.schema, { limit: 1, leaseMs: 30_000, token, provider: 'test', now: null });
    const inAMinute = new Date(Date.now() + 60_000);
    const again = await intentsLease(db.pool, db.schema, { limit: 1, leaseMs: 30_000, token: randomUUID(), provider: 'test', now: inAMinute });
    expect(again.map((i) => i.id)).toEqual([stale!.id]);
    await intentsRecord(db.pool, db.schema, [result(stale!, token, 'accepted')], { maxAttempts: 1, now: null });
    expect(await expectExact()).toBe(before + accepted + 1);
  });

  it('attempts written with other finish times land in their own hours; older than two days they are not kept', async () => {
    const before24 = await expectExact();
    const before47 = await acceptedInWindow(db.pool, db.schema, ACCEPTED_HOURS_KEPT);
    const { rows } = await db.pool.query<{ id: string }>(`SELECT id FROM ${s()}.email_outbox ORDER BY id LIMIT 4`);
    const agesH = [0.5, 5, 30, 80];
    await db.pool.query(
      `INSERT INTO ${s()}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, receipt)
       SELECT id, 100, gen_random_uuid(), 'import', now() - make_interval(secs => age * 3600), now() - make_interval(secs => age * 3600), 'accepted', 'r-' || id
         FROM unnest($1::text[], $2::float8[]) AS i(id, age)`,
      [rows.map((r) => r.id), agesH],
    );
    // 0.5 h and 5 h ago fall in the 24 h window; 30 h only in the 47 h one; 80 h in none.
    expect(await expectExact()).toBe(before24 + 2);
    expect(await acceptedInWindow(db.pool, db.schema, ACCEPTED_HOURS_KEPT)).toBe(before47 + 3);
    const { rows: old } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${s()}.email_accepted_hours WHERE hour < now() - interval '2 days 1 hour'`,
    );
    expect(old[0]!.n).toBe(0);
  });

  it('deleting accepted attempts (a prune, or by hand) and rolling back behave', async () => {
    const before = await expectExact();
    await db.pool.query(`DELETE FROM ${s()}.email_attempts WHERE attempt = 100 AND finished_at > now() - interval '1 hour'`);
    expect(await expectExact()).toBe(before - 1);
    await withTransaction(db.pool, async (client) => {
      await client.query(`UPDATE ${s()}.email_attempts SET outcome = 'failed', receipt = NULL WHERE outcome = 'accepted'`);
      throw new Error('roll back');
    }).catch(() => {});
    expect(await expectExact()).toBe(before - 1);
    const future = new Date(Date.now() + 30 * 86_400_000);
    const pruned = await withTransaction(db.pool, (client) => storiesPrune(client, db.schema, { now: future, days: 1, limit: 1000 }));
    expect(pruned.counts.email_attempts).toBeGreaterThan(0);
    expect(await expectExact()).toBeLessThan(before - 1);
  });

  it('TRUNCATE (cascaded from the holds) empties the counts', async () => {
    await expireDue('trunc', 5);
    const before = await expectExact();
    const accepted = await round(100, () => 'accepted');
    expect(await expectExact()).toBe(before + accepted);
    await db.pool.query(`TRUNCATE ${s()}.support_reservations CASCADE`);
    expect(await expectExact()).toBe(0);
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s()}.email_accepted_hours`);
    expect(rows[0]!.n).toBe(0);
  });

  it('several workers recording at once', async () => {
    const before = await expectExact();
    await expireDue('busy', 500);
    const outcomes: AttemptOutcome[] = ['accepted', 'accepted', 'failed', 'rejected'];
    const worker = async (w: number) => {
      while ((await round(40, (i) => outcomes[(i + w) % outcomes.length]!)) > 0);
    };
    await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
    // Every intent ended (maxAttempts 1); about half of the 500 accepted.
    expect(await expectExact()).toBeGreaterThan(before + 200);
    // The workers really spread over several shards (one per backend).
    const { rows } = await db.pool.query<{ shards: number }>(`SELECT count(DISTINCT shard)::int AS shards FROM ${s()}.email_accepted_hours`);
    expect(rows[0]!.shards).toBeGreaterThan(1);
  });

  it("the reputation gauges' window is one the kept hours can answer", () => {
    expect(EVENT_WINDOW_HOURS).toBeLessThanOrEqual(ACCEPTED_HOURS_KEPT);
  });

  it('refuses a window the kept hours cannot answer', async () => {
    await expect(acceptedInWindow(db.pool, db.schema, 48)).rejects.toThrow(/hours must be an integer from 1 to 47/);
    await expect(acceptedInWindow(db.pool, db.schema, 0)).rejects.toThrow(RangeError);
  });
});
