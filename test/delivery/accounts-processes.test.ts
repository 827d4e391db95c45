import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { waitForSent, worstWindowExcess } from '../helpers/fleet.js';
import { expireHolds } from '../helpers/provider-e2e.js';
import { fixture, startNode, type Child } from '../helpers/processes.js';

/**
 * Three delivery processes built from one accounts file, two accounts with
 * limits of their own: each account's bound (burst + perSecond * t over
 * every window of its attempts) holds across the processes, whatever the
 * other account does.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('accounts_procs');
});
afterAll(() => db.close());

const LIMITS = { primary: { perSecond: 30, burst: 6 }, backup: { perSecond: 20, burst: 4 } };

async function startTimes(account: string): Promise<number[]> {
  const { rows } = await db.pool.query<{ t: number }>(
    `SELECT extract(epoch FROM started_at)::float8 AS t FROM ${ident(db.schema)}.email_attempts
      WHERE outcome = 'accepted' AND account = $1 ORDER BY started_at`,
    [account],
  );
  return rows.map((r) => r.t);
}

describe('three delivery processes, two accounts', () => {
  it('the limiter bound holds per account across the processes', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'lh-accounts-'));
    const file = path.join(dir, 'accounts.yaml');
    await writeFile(
      file,
      [
        'accounts:',
        `  - { name: primary, provider: sandbox, rate: { perSecond: ${LIMITS.primary.perSecond}, burst: ${LIMITS.primary.burst} } }`,
        `  - { name: backup, provider: sandbox, rate: { perSecond: ${LIMITS.backup.perSecond}, burst: ${LIMITS.backup.burst} } }`,
        'failover: [primary, backup]',
      ].join('\n'),
    );
    for (const [name, policy] of Object.entries(LIMITS)) await rateLimiterSet(db.pool, db.schema, policy, null, name);
    const ids = await expireHolds(db, 'procs', 120);
    // Half of them are on the backup already (moved there earlier): both accounts send at once.
    const onBackup = ids.filter((_, i) => i % 2 === 1);
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET account = 'backup' WHERE id = ANY ($1)`, [onBackup]);
    await new Promise((r) => setTimeout(r, 250)); // both buckets fill to their burst

    const env = { ...db.env, LEASEHOLD_ACCOUNTS_FILE: file };
    const children: Child[] = [0, 1, 2].map(() => startNode(fixture('delivery-child'), ['--loop', '--concurrency', '8'], env));
    try {
      await Promise.all(children.map((c) => c.waitForLine(/^READY/)));
      await waitForSent(db.pool, db.schema, 120, 30_000);
    } finally {
      for (const child of children) child.process.kill('SIGTERM');
      await Promise.all(children.map((c) => c.exited));
    }

    const primary = await startTimes('primary');
    const backup = await startTimes('backup');
    expect(primary).toHaveLength(60);
    expect(backup).toHaveLength(60);
    expect(worstWindowExcess(primary, LIMITS.primary.perSecond, LIMITS.primary.burst)).toBeLessThanOrEqual(0);
    expect(worstWindowExcess(backup, LIMITS.backup.perSecond, LIMITS.backup.burst)).toBeLessThanOrEqual(0);
    // The two buckets are apart: together they sent faster than either one's bound allows alone.
    const all = [...primary, ...backup].sort((a, b) => a - b);
    expect(worstWindowExcess(all, LIMITS.primary.perSecond, LIMITS.primary.burst)).toBeGreaterThan(0);
    const { rows } = await db.pool.query<{ sent_account: string; n: number }>(
      `SELECT sent_account, count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE id = ANY ($1) GROUP BY 1 ORDER BY 1`,
      [onBackup],
    );
    expect(rows).toEqual([{ sent_account: 'backup', n: 60 }]);
  }, 60_000);
});
