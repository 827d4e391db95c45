import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompareTimersResult } from '../../src/timers/run.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { runCli } from '../helpers/cli.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('timers_cli');
});
afterAll(() => db.close());

describe('leasehold compare-timers', () => {
  it('prints the comparison as JSON and exits 0', async () => {
    const res = await runCli(
      ['compare-timers', '--holds', '6', '--seconds', '0.5', '--kill-every-sends', '0', '--kill-every-ms', '0', '--json'],
      db.env,
    );
    expect(res.code, res.stderr).toBe(0);
    const parsed = JSON.parse(res.stdout) as CompareTimersResult;
    expect(parsed.contenders.map((c) => c.name)).toEqual(['timers', 'scheduler', 'leasehold']);
    // Without crashes all three designs do the job.
    for (const c of parsed.contenders) {
      expect(c.tally, c.name).toMatchObject({ neverExpired: 0, expiredNotEmailed: 0, unflaggedDoubles: 0, confirmedEmailed: 0 });
    }
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_namespace WHERE nspname LIKE 'compare\\_timers\\_%'`,
    );
    expect(rows[0]!.n).toBe(0);
  }, 60_000);

  it.each([
    [['--holds', '0'], /--holds/],
    [['--seconds', 'soon'], /--seconds/],
    [['--kill-every-sends', '-1'], /--kill-every-sends/],
  ])('%j is a usage error: exit 2', async (args, pattern) => {
    const res = await runCli(['compare-timers', ...args], db.env);
    expect(res.code).toBe(2);
    expect(res.stderr.split('\n')[0]).toMatch(pattern);
  });
});
