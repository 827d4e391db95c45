import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantPoliciesGet } from '../../src/tables/tenants.js';
import { runCliInProcess } from '../helpers/cli.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * `leasehold tenants [show|set|delete]`, run in process (the real program
 * and context, configuration from the environment) on a schema of its own,
 * with an accounts file of two accounts and without one.
 */
const ACCOUNTS_YAML = `accounts:
  - name: primary
    provider: sandbox
    rate: { perSecond: 10, burst: 10 }
  - name: backup
    provider: sandbox
    rate: { perSecond: 5, burst: 5 }
failover: [primary, backup]
`;

let db: TestDatabase;
let dir: string;
let withFile: Record<string, string>;
beforeAll(async () => {
  db = await testDatabase('cli_tenants');
  dir = mkdtempSync(path.join(tmpdir(), 'leasehold-tenants-'));
  const file = path.join(dir, 'accounts.yaml');
  writeFileSync(file, ACCOUNTS_YAML);
  // Info level: what the commands log goes to stderr, never into their output.
  withFile = { ...db.env, LOG_LEVEL: 'info', LEASEHOLD_ACCOUNTS_FILE: file };
});
afterAll(async () => {
  await db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const cli = (...args: string[]) => runCliInProcess(args, withFile);
const lines = (stdout: string) => stdout.trimEnd().split('\n');

describe('leasehold tenants', () => {
  it('lists no policies on a fresh schema', async () => {
    const res = await cli('tenants');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe('no tenant policies (every tenant shares its account with no cap)\n');
  });

  it('set creates a policy and prints it; no log line in the output', async () => {
    const res = await cli('tenants', 'set', 'acme', '--per-second', '2.5', '--weight', '3', '--account', 'backup', '--from', 'Acme <no-reply@acme.example>', '--reply-to', 'help@acme.example');
    expect(res.code, res.stderr).toBe(0);
    expect(lines(res.stdout)).toEqual([
      'tenant acme: policy created',
      '  cap       2.5/s, burst 3',
      '  weight    3',
      '  account   backup',
      '  from      Acme <no-reply@acme.example>',
      '  reply-to  help@acme.example',
      expect.stringMatching(/^ {2}created {3}\d{4}-\d\d-\d\dT/),
      expect.stringMatching(/^ {2}updated {3}\d{4}-\d\d-\d\dT/),
    ]);
    expect(res.stdout).not.toContain('{');
    expect(await tenantPoliciesGet(db.pool, db.schema, 'acme')).toMatchObject({ perSecond: 2.5, burst: 3, weight: 3, account: 'backup' });
  });

  it('set again replaces the policy as a whole: the flags left out are not set', async () => {
    const res = await cli('tenants', 'set', 'acme', '--weight', '4');
    expect(res.code, res.stderr).toBe(0);
    expect(lines(res.stdout).slice(0, 6)).toEqual([
      'tenant acme: policy replaced',
      '  cap       none',
      '  weight    4',
      '  account   - (failover as usual)',
      "  from      - (the templates')",
      "  reply-to  - (the templates')",
    ]);
  });

  it('show prints one policy, --json what GET /v1/tenants/:tenant answers', async () => {
    const shown = await cli('tenants', 'show', 'acme');
    expect(shown.code, shown.stderr).toBe(0);
    expect(lines(shown.stdout)[0]).toBe('tenant acme');
    expect(lines(shown.stdout)[2]).toBe('  weight    4');
    const json = await cli('tenants', 'show', 'acme', '--json');
    expect(json.code, json.stderr).toBe(0);
    const stored = (await tenantPoliciesGet(db.pool, db.schema, 'acme'))!;
    expect(JSON.parse(json.stdout)).toEqual(JSON.parse(JSON.stringify(stored)));
  });

  it("names the empty tenant ''", async () => {
    const set = await cli('tenants', 'set', '', '--per-second', '1', '--burst', '5');
    expect(set.code, set.stderr).toBe(0);
    expect(lines(set.stdout)[0]).toBe("tenant '': policy created");
    expect(lines((await cli('tenants', 'show', '')).stdout)[1]).toBe('  cap       1/s, burst 5');
  });

  it('the listing is a table, by tenant (the empty tenant first); --json is the API page; --limit pages with a cursor', async () => {
    await cli('tenants', 'set', 'globex');
    const res = await cli('tenants');
    expect(res.code, res.stderr).toBe(0);
    const table = lines(res.stdout);
    expect(table[0]).toMatch(/^TENANT\s+CAP\s+WEIGHT\s+ACCOUNT\s+FROM\s+REPLY-TO\s+UPDATED$/);
    expect(table.slice(1).map((line) => line.split(/ {2,}/).slice(0, 4))).toEqual([
      ["''", '1/s, burst 5', '1', '-'],
      ['acme', 'none', '4', '-'],
      ['globex', 'none', '1', '-'],
    ]);

    const json = JSON.parse((await cli('tenants', '--json')).stdout) as { policies: Array<{ tenant: string }>; nextCursor: string | null };
    expect(json.policies.map((p) => p.tenant)).toEqual(['', 'acme', 'globex']);
    expect(json.nextCursor).toBeNull();

    const first = await cli('tenants', '--limit', '2');
    const more = lines(first.stdout).at(-1)!;
    expect(more).toMatch(/^more: leasehold tenants --cursor \S+$/);
    const next = await cli('tenants', '--limit', '2', '--cursor', more.split(' ').at(-1)!);
    expect(next.code, next.stderr).toBe(0);
    expect(lines(next.stdout).slice(1).map((line) => line.split(/ {2,}/)[0])).toEqual(['globex']);
  });

  it.each([
    [['set', 'acme', '--weight', '0'], /--weight.*must be a whole number from 1 to 1000/],
    [['set', 'acme corp'], /tenant.*must be empty or 1-128 characters/],
    [['set', 'acme', '--per-second', '0'], /--per-second.*must be a number from 0\.001/],
    [['set', 'acme', '--burst', '3'], /^leasehold tenants set: --burst: needs --per-second/],
    [['set', 'acme', '--account', 'nobody'], /^leasehold tenants set: --account: must be a configured account \(primary, backup\)/],
    [['set', 'acme', '--account', 'Primary'], /--account.*must be an account name/],
    [['set', 'acme', '--from', 'acme'], /--from.*must be an address or "Name <address>"/],
    [['set', 'acme', '--reply-to', 'a b@acme.example'], /--reply-to.*must be an address/],
    [['show', '-acme'], /unknown option|tenant/],
    [['tenants-typo'], /unknown command/],
  ])('a bad value is a usage error (exit 2) naming it, and changes nothing: %j', async (args, message) => {
    const before = await tenantPoliciesGet(db.pool, db.schema, 'acme');
    const res = args[0] === 'tenants-typo' ? await runCliInProcess(args, withFile) : await cli('tenants', ...args);
    expect(res.code, res.stdout).toBe(2);
    expect(res.stderr).toMatch(message);
    expect(await tenantPoliciesGet(db.pool, db.schema, 'acme')).toEqual(before);
  });

  it('show and delete of a tenant without a policy fail (exit 1) saying so; delete removes one', async () => {
    const show = await cli('tenants', 'show', 'nobody');
    expect(show.code).toBe(1);
    expect(show.stderr).toBe('leasehold: tenant nobody has no policy (it shares its account with no cap)\n');
    expect((await cli('tenants', 'delete', 'nobody')).stderr).toBe('leasehold: tenant nobody has no policy\n');

    const deleted = await cli('tenants', 'delete', 'globex');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe('tenant globex: policy deleted (it shares its account with no cap)\n');
    expect((await cli('tenants', 'show', 'globex')).code).toBe(1);
  });

  it('without an accounts file the one account is `default`', async () => {
    const env = { ...db.env };
    const ok = await runCliInProcess(['tenants', 'set', 'solo', '--account', 'default'], env);
    expect(ok.code, ok.stderr).toBe(0);
    const refused = await runCliInProcess(['tenants', 'set', 'solo', '--account', 'primary'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--account: must be a configured account (default)');
  });
});
