import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareTimers, type CompareTimersResult, type ContenderResult } from '../../src/timers/run.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('timers');
});
afterAll(() => db.close());

const schemasLike = async (prefix: string) =>
  (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname LIKE $1`, [`${prefix}%`])).rows[0]!.n;

/**
 * Real processes, real SIGKILLs, a real database. Only invariants are
 * asserted, never timings: what must hold however slowly the machine runs.
 */
describe('compare-timers at a small size', () => {
  let result: CompareTimersResult;
  const of = (name: string) => result.contenders.find((c) => c.name === name)!;

  beforeAll(async () => {
    result = await compareTimers({
      pool: db.pool,
      databaseUrl: db.url,
      holds: 40,
      seconds: 2,
      seed: 3,
      killEverySends: 8,
      killEveryMs: 2500,
      // Room for three processes to start on a loaded machine before the first deadline.
      leadMs: 3000,
      schemaPrefix: 'timers_test',
    });
  }, 90_000);

  it('leasehold loses nothing, never doubles without a flag, never emails a confirmed hold', () => {
    const leasehold = of('leasehold');
    expect(leasehold.settled).toBe(true);
    expect(leasehold.unexpectedExits).toBe(0);
    expect(leasehold.tally).toMatchObject({ neverExpired: 0, expiredNotEmailed: 0, unflaggedDoubles: 0, confirmedEmailed: 0 });
    expect(leasehold.tally.confirmed + leasehold.tally.expired).toBe(40);
  });

  it("a kill at leasehold's send comes back as a flagged repeat, and the outbox says so too", () => {
    const leasehold = of('leasehold');
    if (leasehold.killsAtSend > 0) expect(leasehold.tally.flaggedDoubles).toBeGreaterThan(0);
    expect(leasehold.outboxPossibleDuplicates).toBeGreaterThanOrEqual(leasehold.tally.flaggedDoubles);
  });

  it('the timer process loses holds once it has been killed (by construction)', () => {
    const timers = of('timers');
    expect(timers.killsAtSend + timers.killsTimed).toBeGreaterThan(0);
    expect(timers.tally.neverExpired + timers.tally.expiredNotEmailed).toBeGreaterThan(0);
    // Its losses are losses: with no durable record there is nothing to send twice.
    expect(timers.tally.unflaggedDoubles + timers.tally.flaggedDoubles).toBe(0);
  });

  it('the scheduler loses nothing, but a kill at its send repeats the send unflagged or mails a confirmed hold', () => {
    const scheduler = of('scheduler');
    expect(scheduler.settled).toBe(true);
    expect(scheduler.tally.neverExpired + scheduler.tally.expiredNotEmailed).toBe(0);
    if (scheduler.killsAtSend > 0) expect(scheduler.tally.unflaggedDoubles + scheduler.tally.confirmedEmailed).toBeGreaterThan(0);
    expect(scheduler.tally.flaggedDoubles).toBe(0);
  });

  it('every contender saw the same holds, and every hold ended in one state', () => {
    for (const c of result.contenders as ContenderResult[]) {
      expect(c.tally.holds, c.name).toBe(40);
      expect(c.tally.confirmed + c.tally.expired + c.tally.neverExpired, c.name).toBe(40);
    }
  });

  it('drops its schemas', async () => {
    expect(await schemasLike('timers_test_')).toBe(0);
  });
});
