import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { cliPath, startNode } from '../helpers/processes.js';
import { ids, writeStory } from '../helpers/retention-stories.js';
import { runCli } from '../helpers/cli.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_retention');
});
afterAll(() => db.close());

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { ...db.env, ...env });

describe('usage and configuration', () => {
  it.each(['prune', 'erase'])('%s --help exits 0 with usage', async (command) => {
    const res = await runCli([command, '--help'], {});
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`^Usage: leasehold ${command}`));
  });

  it.each([
    [['prune', '--retention-days', 'soon'], /--retention-days.*whole number of days from 1 to 3650, or off/],
    [['prune', '--erase-pii-after-days', '40'], /--erase-pii-after-days: must not be more than the retention \(30 days\)/],
    // erase with neither --email nor --tenant (or both): test/retention/erase-tenant.test.ts, in process.
    [['erase', '--email', 'nobody'], /--email.*email address/],
  ])('%j is a usage error: exit 2 and one clear line', async (args, pattern) => {
    const res = await cli(args);
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split('\n')[0]).toMatch(pattern);
    expect(res.stdout).toBe('');
  });

  // Every rule is checked without processes in test/config.test.ts; here, that bad config stops commands with exit 2.
  it.each([
    ['prune', { LEASEHOLD_RETENTION_DAYS: 'a month' }, 'LEASEHOLD_RETENTION_DAYS: must be a whole number of days from 1 to 3650, or off (got "a month")'],
    ['start', { LEASEHOLD_RETENTION_DAYS: '5' }, 'LEASEHOLD_ERASE_PII_AFTER_DAYS: must not be more than the retention (5 days)'],
  ] as const)('`%s` with %j exits 2 naming the variable', async (command, env, message) => {
    const res = await cli([command], env);
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toContain(`leasehold: invalid configuration: ${message}`);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('prune and erase', () => {
  it('prune --dry-run reports per table and changes nothing; prune then does exactly that', async () => {
    await writeStory(db.pool, db.schema, { id: 'cli-old', status: 'expired', endedDaysAgo: 45, intent: 'sent' });
    await writeStory(db.pool, db.schema, { id: 'cli-mid', status: 'confirmed', endedDaysAgo: 10 });
    await writeStory(db.pool, db.schema, { id: 'cli-pending', status: 'expired', endedDaysAgo: 45, intent: 'pending' });
    const dry = await cli(['prune', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('dry run (nothing changed): finished holds, intents and attempts deleted 30 day(s) after they end; personal data erased 7 day(s) after they end');
    expect(dry.stdout).toMatch(/email_attempts\s+would delete 1, would erase 0/);
    expect(dry.stdout).toMatch(/email_outbox\s+would delete 1, would erase 0/);
    expect(dry.stdout).toMatch(/support_reservations\s+would delete 1, would erase 1/);
    expect(dry.stdout).toContain('kept: 1 stories past the retention whose email is pending or finished recently');
    expect(await ids(db.pool, db.schema, 'support_reservations')).toEqual(['cli-mid', 'cli-old', 'cli-pending']);

    const json = JSON.parse((await cli(['prune', '--dry-run', '--json'])).stdout);
    expect(json).toMatchObject({ dryRun: true, prune: { support_reservations: 1 }, erase: { support_reservations: 1 }, keptPendingStories: 1 });

    // The run's event is in the log with --verbose (a person's command logs only warnings otherwise).
    const run = await cli(['prune', '--verbose'], { LOG_LEVEL: 'info' });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/support_reservations\s+deleted 1, erased 1/);
    expect(run.stderr).toContain('"event":"retention.pruned"');
    expect(await ids(db.pool, db.schema, 'support_reservations')).toEqual(['cli-mid', 'cli-pending']);
  });

  it('flags override the policy for one run; off keeps everything', async () => {
    await writeStory(db.pool, db.schema, { id: 'cli-flag', status: 'cancelled', endedDaysAgo: 3 });
    const kept = await cli(['prune', '--retention-days', 'off', '--erase-pii-after-days', 'off', '--json']);
    expect(JSON.parse(kept.stdout)).toMatchObject({ policy: { retentionDays: null, erasePiiAfterDays: null }, pruned: {}, erased: {} });
    const gone = await cli(['prune', '--retention-days', '2', '--erase-pii-after-days', '1', '--batch', '5']);
    expect(gone.code, gone.stderr).toBe(0);
    expect(await ids(db.pool, db.schema, 'support_reservations')).not.toContain('cli-flag');
  });

  it('erase --email reports what changed per table, the pending email rejected and the held hold kept, without printing the address', async () => {
    await writeStory(db.pool, db.schema, { id: 'cli-zoe-1', status: 'expired', endedDaysAgo: 1, intent: 'pending', email: 'zoe@example.com' });
    await writeStory(db.pool, db.schema, { id: 'cli-zoe-2', status: 'held', endedDaysAgo: 0, email: 'zoe@example.com' });
    const res = await cli(['erase', '--email', 'Zoe@Example.com']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^erased:/);
    expect(res.stdout).toMatch(/support_reservations\s+rows changed 1/);
    expect(res.stdout).toMatch(/email_outbox\s+rows changed 1/);
    expect(res.stdout).toContain('1 pending email(s) rejected ("erased on request"): they will not be sent');
    expect(res.stdout).toContain('1 held hold(s) kept, they are live reservations: cli-zoe-2');
    expect((res.stdout + res.stderr).toLowerCase()).not.toContain('zoe@example.com');
    const again = await cli(['erase', '--email', 'zoe@example.com', '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ counts: { support_reservations: 0, email_outbox: 0 }, heldHoldIds: ['cli-zoe-2'] });
  });
});

describe('start', () => {
  it('runs the prune worker next to the lanes', async () => {
    const schema = `${db.schema}_start`;
    const env = { ...db.env, LEASEHOLD_SCHEMA: schema, PORT: '0', LEASEHOLD_API_TOKEN: 'test-token-0123456789abcdef', LOG_LEVEL: 'info' };
    const migrate = await runCli(['migrate'], env);
    expect(migrate.code, migrate.stderr).toBe(0);
    await writeStory(db.pool, schema, { id: 'start-old', status: 'confirmed', endedDaysAgo: 31 });
    const child = startNode(cliPath, ['start'], env);
    try {
      const deadline = Date.now() + 20_000;
      while ((await ids(db.pool, schema, 'support_reservations')).length > 0) {
        if (Date.now() > deadline) throw new Error(`not pruned; ${child.stderr().slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      child.process.kill('SIGTERM');
    }
    expect((await child.exited).code).toBe(0);
    expect(child.stderr()).toContain('"event":"retention_worker.started"');
    expect(child.stderr()).toMatch(/"event":"retention.pruned","table":"support_reservations","count":1/);
    await db.pool.query(`DROP SCHEMA ${ident(schema)} CASCADE`);
  });
});
