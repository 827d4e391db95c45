import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { cliPath, startNode } from '../helpers/processes.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_lanes');
});
afterAll(() => db.close());

describe('leasehold CLI lanes', () => {
  it('invalid configuration prints one line naming the variable and exits 2', async () => {
    const child = startNode(cliPath, ['expiry-worker'], { ...db.env, LEASEHOLD_EXPIRY_BATCH: 'lots' });
    const { code } = await child.exited;
    expect(code).toBe(2);
    const lines = child.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^leasehold: invalid configuration: LEASEHOLD_EXPIRY_BATCH: /);
  });

  const accountsFile = (name: string, text: string) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lh-accounts-'));
    const file = path.join(dir, `${name}.yaml`);
    writeFileSync(file, text);
    return file;
  };
  const resendAccount = (name: string, extra = '') => `  - { name: ${name}, provider: resend, apiKey: "\${RESEND_API_KEY}", rate: { perSecond: 2, burst: 2 }${extra} }`;

  it.each([
    ['an unknown provider', `accounts:\n  - { name: primary, provider: mailgun, rate: { perSecond: 2, burst: 2 } }`, /accounts\[0\]\.provider: must be one of sandbox, resend, postmark, ses, smtp/],
    ['a missing secret', `accounts:\n${resendAccount('primary').replace('RESEND_API_KEY', 'UNSET_KEY')}`, /accounts\[0\]\.apiKey: \$\{UNSET_KEY\} is not set in the environment/],
    ['a literal secret', `accounts:\n  - { name: primary, provider: resend, apiKey: re_live_1234, rate: { perSecond: 2, burst: 2 } }`, /accounts\[0\]\.apiKey: is a secret/],
    ['duplicate names', `accounts:\n${resendAccount('primary')}\n${resendAccount('primary')}`, /accounts\[1\]\.name: "primary" is named twice/],
    ['a failover account that does not exist', `accounts:\n${resendAccount('primary')}\nfailover: [primary, backup]`, /failover\[1\]: "backup" is not an account in this file/],
  ])('an accounts file with %s is refused at start: exit 2, one line naming the field', async (_what, text, pattern) => {
    const file = accountsFile('broken', text);
    const child = startNode(cliPath, ['delivery-worker'], { ...db.env, LEASEHOLD_ACCOUNTS_FILE: file, RESEND_API_KEY: 're_secret_value' });
    expect((await child.exited).code).toBe(2);
    const lines = child.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^leasehold: invalid configuration: LEASEHOLD_ACCOUNTS_FILE: /);
    expect(lines[0]).toMatch(pattern);
    expect(lines[0]).not.toContain('re_secret_value');
  });

  it('a send timeout not shorter than the lease is refused at start', async () => {
    const child = startNode(cliPath, ['delivery-worker'], { ...db.env, LEASEHOLD_LEASE_MS: '5000', LEASEHOLD_SEND_TIMEOUT_MS: '5000' });
    expect((await child.exited).code).toBe(2);
    expect(child.stderr()).toContain('LEASEHOLD_SEND_TIMEOUT_MS');
  });

  it.each(['start', 'expiry-worker', 'delivery-worker', 'migrate', 'demo'])('`%s --help` prints usage and exits 0', async (command) => {
    const child = startNode(cliPath, [command, '--help'], {});
    expect((await child.exited).code).toBe(0);
    expect(child.stdout()).toContain(`Usage: leasehold ${command}`);
  });

  it('an unknown command is a usage error (exit 2)', async () => {
    const child = startNode(cliPath, ['expire-everything'], {});
    expect((await child.exited).code).toBe(2);
  });

  it('`leasehold delivery-worker` sends the backlog through the sandbox and drains on SIGTERM', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 100 });
    await insertDueHolds(db.pool, db.schema, 10);
    const expiry = startNode(cliPath, ['expiry-worker'], db.env);
    const delivery = startNode(cliPath, ['delivery-worker'], db.env);
    try {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE state = 'sent'`);
        if (rows[0]!.n === 10) break;
        if (Date.now() > deadline) throw new Error(`sent ${rows[0]!.n}/10; ${delivery.stderr().slice(-1000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      expiry.process.kill('SIGTERM');
      delivery.process.kill('SIGTERM');
    }
    expect((await expiry.exited).code).toBe(0);
    expect((await delivery.exited).code).toBe(0);
    expect(delivery.stdout()).toContain('delivery lane running (provider sandbox)');
    // The sandbox reported every acceptance into email_events (what was still scheduled, on the drain).
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_events WHERE kind = 'delivered' AND intent_id IS NOT NULL`,
    );
    expect(rows[0]!.n).toBe(10);
  });
});

describe('leasehold demo', () => {
  it('seeds holds, runs both lanes on the sandbox and reports the drain at the limit', async () => {
    const schema = `${db.schema}_demo`;
    const child = startNode(cliPath, ['demo', '--holds', '20', '--over', '1', '--rate', '20', '--schema', schema], db.env);
    const { code } = await child.exited;
    expect(code).toBe(0);
    const out = child.stdout();
    expect(out).toContain('seeded 20 holds falling due over 1s; sandbox provider; shared limit 20/s');
    expect(out).toMatch(/^ +t +held +expired +backlog +sent +sent\/s +oldest pending$/m);
    expect(out).toContain('done: 20 emails accepted by the sandbox');
    const { rows } = await db.pool.query<{ state: string; n: number }>(
      `SELECT state, count(*)::int AS n FROM ${ident(schema)}.email_outbox GROUP BY state`,
    );
    expect(rows).toEqual([{ state: 'sent', n: 20 }]);
    await db.pool.query(`DROP SCHEMA ${ident(schema)} CASCADE`);
  });

  it('refuses to drop a schema that is not a demo schema', async () => {
    const child = startNode(cliPath, ['demo', '--schema', 'leasehold'], db.env);
    expect((await child.exited).code).toBe(2);
    expect(child.stderr()).toContain('ending in _demo');
  });
});
