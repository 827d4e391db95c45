import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { deliveryControlGet } from '../../src/tables/delivery-control.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { rateLimiterGet } from '../../src/tables/rate-limiter.js';
import { runCli } from '../helpers/cli.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { recordAcceptance } from '../helpers/sent-intent.js';

/**
 * `leasehold accounts [pause|resume|rate-limit]` and `leasehold move`, as
 * child processes on a schema of their own, with and without an accounts
 * file, through the shipped bin/leasehold.js (npm test builds first).
 */

const ACCOUNTS_YAML = `accounts:
  - name: primary
    provider: sandbox
    rate: { perSecond: 2, burst: 2 }
  - name: backup
    provider: sandbox
    rate: { perSecond: 10, burst: 10 }
failover: [primary, backup]
`;

let db: TestDatabase;
let dir: string;
let withFile: Record<string, string>;
beforeAll(async () => {
  db = await testDatabase('cli_accounts');
  dir = mkdtempSync(path.join(tmpdir(), 'leasehold-accounts-'));
  const file = path.join(dir, 'accounts.yaml');
  writeFileSync(file, ACCOUNTS_YAML);
  withFile = { ...db.env, LEASEHOLD_ACCOUNTS_FILE: file };
});
afterAll(async () => {
  await db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const run = runCli;
const cli = (...args: string[]) => run(args, withFile);

/** One expired hold with its pending intent; returns the intent id. */
async function pendingIntent(prefix: string): Promise<string> {
  const [holdId] = await insertDueHolds(db.pool, db.schema, 1, { prefix });
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  return `reservation-expired:${holdId}`;
}

/** The table row of one account, split on its column gaps. */
function row(stdout: string, name: string): string[] {
  const line = stdout.split('\n').find((l) => l.startsWith(`${name} `));
  expect(line, stdout).toBeDefined();
  return line!.split(/ {2,}/);
}

describe('leasehold accounts', () => {
  it('without an accounts file: the one account `default`', async () => {
    const res = await run(['accounts'], db.env);
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines[0]).toBe('failover: default');
    expect(lines[1]).toMatch(/^NAME\s+PROVIDER\s+FAILOVER\s+UNIT\s+RATE\s+TOKENS\s+PAUSED\s+COOLING DOWN UNTIL\s+BACKLOG\s+LAST MINUTE$/);
    expect(lines).toHaveLength(3);
    expect(row(res.stdout, 'default')).toEqual(['default', 'sandbox', '1', 'requests', '10/s, burst 10', '10.0', 'no', '-', '0', 'none']);
  });

  it('with an accounts file: each account at its own rate, in failover order; --json prints the same as the API', async () => {
    const res = await cli('accounts');
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines[0]).toBe('failover: primary -> backup');
    expect(lines.slice(2).map((l) => l.split(' ')[0])).toEqual(['primary', 'backup']);
    expect(row(res.stdout, 'primary').slice(0, 7)).toEqual(['primary', 'sandbox', '1', 'requests', '2/s, burst 2', '2.0', 'no']);
    expect(row(res.stdout, 'backup').slice(0, 7)).toEqual(['backup', 'sandbox', '2', 'requests', '10/s, burst 10', '10.0', 'no']);

    const json = await cli('accounts', '--json');
    expect(json.code, json.stderr).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(parsed.failover).toEqual(['primary', 'backup']);
    expect(parsed.accounts.map((a: { name: string; rate: { perSecond: number } }) => [a.name, a.rate.perSecond])).toEqual([
      ['primary', 2],
      ['backup', 10],
    ]);
  });

  it('an accounts file that does not parse is a configuration error: exit 2 naming the variable', async () => {
    const broken = path.join(dir, 'broken.yaml');
    writeFileSync(broken, 'accounts:\n  - name: primary\n    provider: carrier-pigeon\n    rate: { perSecond: 2, burst: 2 }\n');
    const res = await run(['accounts'], { ...db.env, LEASEHOLD_ACCOUNTS_FILE: broken });
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toMatch(/^leasehold: invalid configuration: LEASEHOLD_ACCOUNTS_FILE.*accounts\[0\]\.provider/);
  });
});

describe('leasehold accounts rate-limit', () => {
  it("sets one account's policy, keeping the other half; the other account keeps its own", async () => {
    const set = await cli('accounts', 'rate-limit', 'backup', '--burst', '4');
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout.trim()).toBe('rate limit of backup set: 10/s, burst 4');
    expect(await rateLimiterGet(db.pool, db.schema, null, 'backup')).toMatchObject({ perSecond: 10, burst: 4 });
    expect(await rateLimiterGet(db.pool, db.schema, null, 'primary')).toMatchObject({ perSecond: 2, burst: 2 });

    const shown = await cli('accounts', 'rate-limit', 'primary');
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^rate limit of primary: 2\/s, burst 2 \(\d+\.\d permits available now\)/);
  });
});

describe('leasehold accounts pause and resume', () => {
  it('pause one account: its pause shows on it only, and fleet-wide delivery is not paused', async () => {
    const paused = await cli('accounts', 'pause', 'backup', '--reason', 'drill: provider maintenance', '--for', '600');
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout.trim()).toMatch(/^account backup paused: drill: provider maintenance \(until \d{4}-\d\d-\d\dT[\d:.]+Z\)$/);
    expect((await rateLimiterGet(db.pool, db.schema, null, 'backup'))!.pause).toMatchObject({ paused: true, reason: 'drill: provider maintenance', pausedBy: 'operator' });
    expect((await rateLimiterGet(db.pool, db.schema, null, 'primary'))!.pause.paused).toBe(false);
    expect((await deliveryControlGet(db.pool, db.schema)).paused).toBe(false);

    const listed = await cli('accounts');
    expect(row(listed.stdout, 'backup')[6]).toMatch(/^yes: drill: provider maintenance \(by operator, until \d{4}-/);
    expect(row(listed.stdout, 'primary')[6]).toBe('no');

    const resumed = await cli('accounts', 'resume', 'backup');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout.trim()).toBe('account backup resumed (was paused: drill: provider maintenance)');
    expect((await rateLimiterGet(db.pool, db.schema, null, 'backup'))!.pause.paused).toBe(false);
    expect((await cli('accounts', 'resume', 'backup')).stdout.trim()).toBe('account backup was not paused; it is running');
  });

  it('an account that is not configured is a failure: exit 1, and nothing is paused', async () => {
    const res = await cli('accounts', 'pause', 'ghost');
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe('leasehold: account "ghost" does not exist');
    expect(await rateLimiterGet(db.pool, db.schema, null, 'ghost')).toBeUndefined();
  });

  it.each([
    [['accounts', 'pause', 'Primary'], /account name/],
    [['accounts', 'rate-limit', 'primary', '--burst', '2.5'], /--burst/],
    [['accounts', 'pause', 'primary', '--for', '0'], /--for/],
    [['move', 'reservation-expired:x'], /--to/],
    [['move', 'reservation-expired:x', '--to', 'Back Up'], /account name/],
  ])('%j is a usage error: exit 2 and one clear line', async (args, pattern) => {
    const res = await cli(...args);
    expect(res.code).toBe(2);
    expect(res.stderr.split('\n')[0]).toMatch(pattern);
    expect(res.stdout).toBe('');
  });
});

describe('leasehold move', () => {
  it('moves a pending intent to another account, printing no address', async () => {
    const id = await pendingIntent('mv');
    const res = await cli('move', id, '--to', 'backup');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout.trim()).toBe(`intent ${id} moved to backup: it is sent through it next`);
    expect(await intentsGet(db.pool, db.schema, id)).toMatchObject({ state: 'pending', account: 'backup' });
    const listed = await cli('accounts');
    expect(row(listed.stdout, 'backup')[8]).toBe('1');
    for (const output of [res.stdout, res.stderr, listed.stdout]) expect(output).not.toContain('@example.com');
  });

  it('refuses a sent intent and an account not in failover: exit 1, the intent unchanged', async () => {
    const sent = await pendingIntent('sent');
    await recordAcceptance(db.pool, db.schema, sent, 'receipt-sent');
    const refused = await cli('move', sent, '--to', 'backup');
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(`leasehold: intent "${sent}" is sent: only a pending intent can move`);
    expect(await intentsGet(db.pool, db.schema, sent)).toMatchObject({ state: 'sent', account: null });

    const pending = await pendingIntent('stay');
    const unknown = await cli('move', pending, '--to', 'ghost');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('leasehold: account: must be an account in failover (primary, backup)');
    expect(await intentsGet(db.pool, db.schema, pending)).toMatchObject({ state: 'pending', account: null });
  });
});
