import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { ROOT } from '../helpers/docs.js';

/** `leasehold capacity` as a real child process: no database, nothing fetched. */

const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-capacity-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}

// A configuration no test machine's environment should leak into.
const env = { LEASEHOLD_RATE_PER_SECOND: '10', LEASEHOLD_RATE_BURST: '10', LEASEHOLD_EMAIL_PROMISE_S: '900', EMAIL_PROVIDER: 'sandbox', DATABASE_URL: '' };
const capacity = (...args: string[]) => runCli(['capacity', ...args], env);

const workloadFile = file(
  'workload.yaml',
  `volume:
  emailsPerDay: 20000
  expiredShare: 0.4
burst:
  holds: 5000
provider:
  name: ses
  perSecond: 14
  burst: 14
  dailyQuota: 50000
`,
);

describe('leasehold capacity', () => {
  it('--json: the report, with flags overriding the file', async () => {
    const res = await capacity('--file', workloadFile, '--per-second', '50', '--json');
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const report = JSON.parse(res.stdout);
    expect(Object.keys(report)).toEqual(
      expect.arrayContaining(['pricesFile', 'workload', 'derived', 'steady', 'burst', 'quota', 'rows', 'statements', 'costs', 'prices', 'unknowns']),
    );
    // The flag won over the file; the file's other fields stayed.
    expect(report.workload.provider).toMatchObject({ name: 'ses', perSecond: 50, burst: 14, dailyQuota: 50000 });
    expect(report.burst).toMatchObject({ holds: 5000, limiterPerSecond: 50, limiterBurst: 14, verdict: 'meets', promiseSeconds: 900 });
    // (5000 - 14) / (50 - 20000/86400) = 100.2 s, rounded to 4 decimals in JSON
    expect(report.burst.drainSeconds).toBeCloseTo(4986 / (50 - 20000 / 86400), 3);
    expect(report.quota).toMatchObject({ dailyQuota: 50000, verdict: 'within' });
    expect(report.rows.perDay).toMatchObject({ holds: 50000, intents: 20000, attempts: 20000 });
    expect(report.statements.average).toHaveProperty('total');
    expect(report.costs.map((d: { id: string }) => d.id)).toEqual(['leasehold', 'timer-per-hold', 'managed-queue']);
    for (const design of report.costs) {
      expect(typeof design.monthlyUsd).toBe('number');
      for (const line of design.lines) {
        expect(Object.keys(line).sort()).toEqual(['assumption', 'item', 'price', 'quantity', 'unit', 'unitUsd', 'usd']);
      }
    }
    expect(report.prices).toMatchObject({ region: 'us-east-1', recorded: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) });
    expect(report.unknowns.length).toBeGreaterThan(3);
  });

  it('the configured promise and limiter are the defaults', async () => {
    const res = await runCli(['capacity', '--emails-per-day', '1000', '--burst-holds', '100', '--json'], {
      ...env,
      LEASEHOLD_EMAIL_PROMISE_S: '60',
      LEASEHOLD_RATE_PER_SECOND: '2',
    });
    expect(res.code).toBe(0);
    const report = JSON.parse(res.stdout);
    expect(report.burst).toMatchObject({ promiseSeconds: 60, limiterPerSecond: 2, limiterBurst: 10 });
    // (100 - 10) / (2 - 1000/86400) = 45.3 s: inside 60 s
    expect(report.burst.verdict).toBe('meets');
  });

  it('text: a short summary by default, one line per answer, the detail behind --detail', async () => {
    const res = await capacity('--file', workloadFile);
    expect(res.code).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines.length).toBeLessThanOrEqual(12);
    expect(res.stdout).toMatch(/sending rate\s+keeps-up/);
    expect(res.stdout).toMatch(/worst burst\s+5,000 holds drain in 6m2s, oldest email 6m2s against the 15m0s promise: meets/);
    expect(res.stdout).toMatch(/cost, this design\s+\$[\d,.]+ a month/);
    expect(res.stdout).toContain('--detail for every formula and each price with its source and date');
    expect(res.stdout).not.toContain('What this model cannot know');
  });

  it('--detail: every section, each cost line with its assumption, each price with its source page and date', async () => {
    const res = await capacity('--file', workloadFile, '--detail');
    expect(res.code).toBe(0);
    for (const heading of [
      'Sending rate',
      'Worst burst: 5,000 holds falling due at once',
      'Daily quota',
      'Rows and storage',
      'Database statements per second',
      'Monthly cost, USD',
      'this design: one small PostgreSQL + workers',
      'one timer per hold',
      'managed scheduler + queue',
      'What this model cannot know',
    ]) {
      expect(res.stdout).toContain(heading);
    }
    expect(res.stdout).toMatch(/oldest email age\s+6m2s against the 15m0s promise: meets/);
    expect(res.stdout).toMatch(/Check every figure/);
    const prices = res.stdout.split('Prices used')[1]!.split('What this model cannot know')[0]!.trim().split('\n').slice(1);
    // The twelve unit prices and the provider's plan (ses), each with its page and date, none in exponent notation.
    expect(prices).toHaveLength(13);
    for (const line of prices) expect(line).toMatch(/^\s+[\w.]+\s+\$[\d.,]+\S* .* https:\/\/\S+ \(\d{4}-\d{2}-\d{2}\)$/);
    expect(res.stdout).not.toMatch(/\de-\d/);
    expect(res.stdout).not.toMatch(/from memory/);
  });

  it('--prices replaces the table: its prices, sources and dates are the ones printed', async () => {
    const own = readFileSync(path.join(ROOT, 'capacity/prices.yaml'), 'utf8')
      .replace(/usd: 0\.032\n/, 'usd: 0.5\n')
      .replace('https://aws.amazon.com/rds/postgresql/pricing/\n    taken: 2026-11-30\n    note: Amazon RDS', 'https://example.com/our-rds-quote\n    taken: 2026-12-01\n    note: Amazon RDS');
    const res = await capacity('--file', workloadFile, '--detail', '--prices', file('own-prices.yaml', own));
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/postgres_instance_hour\s+\$0\.5 per hour\s+https:\/\/example\.com\/our-rds-quote \(2026-12-01\)/);
    expect(res.stdout).toMatch(/database instance\s+\$365\.00\s+730 hour x \$0\.5/);
  });

  it('--prices reads another table', async () => {
    const res = await capacity('--emails-per-day', '10', '--prices', file('prices.yaml', 'currency: EUR\n'));
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toBe('leasehold capacity: price table currency: must be USD (the model does not convert)');
  });

  // One child process per kind of bad input (flag, file, field in a file);
  // every field's rule is checked without a process in input.test.ts.
  it.each([
    [['--emails-per-day', '10', '--burst', '2.5'], /^leasehold capacity: provider\.burst \(--burst\): must be a whole number from 1 to 1000000$/],
    [['--file', path.join(dir, 'missing.yaml')], /^leasehold capacity: --file: cannot read .*missing\.yaml: ENOENT$/],
    [['--file', file('typo.yaml', 'volume:\n  emailPerDay: 5\n')], /^leasehold capacity: volume\.emailPerDay: unknown field; did you mean emailsPerDay\?$/],
  ])('%j exits 2 with one line naming the field', async (args, pattern) => {
    const res = await capacity(...args);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr.trim()).toMatch(pattern);
  });

  it('--help lists the flags and exits 0', async () => {
    const res = await capacity('--help');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^Usage: leasehold capacity/);
    for (const flag of ['--file', '--json', '--emails-per-day', '--burst-holds', '--per-second', '--daily-quota', '--prices']) expect(res.stdout).toContain(flag);
  });
});
