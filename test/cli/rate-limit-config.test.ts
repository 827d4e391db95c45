import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { auditList } from '../../src/tables/audit-log.js';
import { rateLimiterGet } from '../../src/tables/rate-limiter.js';
import { runCli } from '../helpers/cli.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import type { RecordedRequest } from '../helpers/fake-http.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { logEvents } from '../helpers/fleet.js';
import { insertDueHolds } from '../helpers/holds.js';
import { cliPath, startNode, type Child } from '../helpers/processes.js';

/**
 * The path of issue 38: a new user tries the sandbox first, then starts
 * the same database with a provider and the provider's lower limit, as
 * getting-started says. The real `leasehold start`, three times on one
 * database, with the Resend adapter pointed at the local fake.
 */

/** The fake Resend, noting when each request arrived. */
class TimedResend extends FakeResend {
  readonly arrivals: number[] = [];
  protected override respond(request: RecordedRequest) {
    if (request.path.startsWith('/emails')) this.arrivals.push(performance.now());
    return super.respond(request);
  }
}

const TOKEN = 'rate-config-test-token-0123456789';
let db: TestDatabase;
let fake: TimedResend;
beforeAll(async () => {
  db = await testDatabase('cli_rate_config');
  fake = new TimedResend();
  await fake.start();
});
afterAll(async () => {
  await fake.stop();
  await db.close();
});

const base = () => ({ ...db.env, PORT: '0', LEASEHOLD_API_TOKEN: TOKEN, LOG_LEVEL: 'info' });
const provider = () => ({
  ...base(),
  EMAIL_PROVIDER: 'resend',
  RESEND_API_KEY: fake.apiKey,
  RESEND_BASE_URL: fake.url,
  // One email per request, so the requests are what the limit paces.
  LEASEHOLD_SEND_BATCH: '1',
  LEASEHOLD_RATE_PER_SECOND: '1.9',
  LEASEHOLD_RATE_BURST: '1',
});

/** `leasehold start` until it announces its lanes; its API's address. */
async function start(env: Record<string, string>): Promise<{ child: Child; url: string }> {
  const child = startNode(cliPath, ['start'], env);
  const line = await child.waitForLine(/leasehold API listening on /, 60_000);
  await child.waitForLine(/delivery lane running/, 60_000);
  return { child, url: line.replace(/^.*listening on /, '').trim() };
}

async function stop(child: Child): Promise<void> {
  child.process.kill('SIGTERM');
  expect((await child.exited).code).toBe(0);
}

const sent = async () =>
  (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE state = 'sent'`)).rows[0]!.n;

const limiter = async () => (await rateLimiterGet(db.pool, db.schema))!;

describe('the configured rate limit on an existing database (issue 38)', () => {
  it('the sandbox first, then Resend at 1.9/s burst 1: the new limit is in force, audited, and paces what reaches Resend', async () => {
    // 1. The sandbox, with the defaults.
    const sandbox = await start(base());
    // Idle rounds ran meanwhile: nothing sent, nothing counted against the day.
    await new Promise((r) => setTimeout(r, 2000));
    await stop(sandbox.child);
    expect(await limiter()).toMatchObject({ perSecond: 10, burst: 10, source: 'configuration', quotaUsedToday: 0 });

    // 2. Resend, with its lower limit, and a backlog due at once.
    const count = 8;
    await insertDueHolds(db.pool, db.schema, count, { prefix: 'rl' });
    const resend = await start(provider());
    try {
      const deadline = Date.now() + 60_000;
      while ((await sent()) < count) {
        if (Date.now() > deadline) throw new Error(`sent ${await sent()}/${count}; ${resend.child.stderr().slice(-1500)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await stop(resend.child);
    }
    expect(await limiter()).toMatchObject({
      perSecond: 1.9,
      burst: 1,
      source: 'configuration',
      setBy: 'LEASEHOLD_RATE_PER_SECOND/LEASEHOLD_RATE_BURST',
      configured: { perSecond: 1.9, burst: 1 },
    });
    const audits = (await auditList(db.pool, db.schema, { limit: 10, action: 'rate_limit.set' })).entries;
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({ actor: 'configuration', target: 'default', before: { perSecond: 10, burst: 10 }, after: { perSecond: 1.9, burst: 1 } });
    expect(logEvents(resend.child.stderr(), 'rate_limit.configured')).toHaveLength(1);
    // What reached Resend: at most burst + perSecond x t in every window
    // (a quarter of a second's slack for the way between the database's
    // clock and the fake's). At the old 10/s burst 10 all 8 arrived at once.
    const t = fake.arrivals;
    expect(t.length).toBe(count);
    for (let i = 0; i < t.length; i++) {
      for (let j = i; j < t.length; j++) {
        expect(j - i + 1).toBeLessThanOrEqual(1 + 1.9 * ((t[j]! - t[i]!) / 1000 + 0.25));
      }
    }
  });

  it("an operator's change survives a restart with the same configuration: the start warns with both values, and status says who set it", async () => {
    const changed = await runCli(['rate-limit', '--per-second', '1', '--burst', '1'], db.env);
    expect(changed.code).toBe(0);
    const actor = `cli:${userInfo().username}`;
    const again = await start(provider());
    try {
      expect(await limiter()).toMatchObject({ perSecond: 1, burst: 1, source: 'operator', setBy: actor, configured: { perSecond: 1.9, burst: 1 } });
      const [warning] = logEvents(again.child.stderr(), 'rate_limit.configuration_overridden');
      expect(warning).toMatchObject({ account: 'default', configured: { perSecond: 1.9, burst: 1 }, inForce: { perSecond: 1, burst: 1, source: 'operator', setBy: actor } });
      const status = await fetch(`${again.url}/v1/status`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const body = (await status.json()) as { stats: { limiter: Record<string, unknown> } };
      expect(body.stats.limiter).toMatchObject({ perSecond: 1, source: 'operator', setBy: actor, configured: { perSecond: 1.9, burst: 1 } });
    } finally {
      await stop(again.child);
    }
    const status = await runCli(['status'], db.env);
    expect(status.stdout).toMatch(new RegExp(`rate limit +1/s, burst 1 \\(.*\\); set by operator ${actor} at \\S+; configured: 1\\.9/s, burst 1`));
    // Only the configuration's change and the operator's are audited.
    const actors = (await auditList(db.pool, db.schema, { limit: 10, action: 'rate_limit.set' })).entries.map((e) => e.actor);
    expect(actors).toEqual([actor, 'configuration']);
  });
});

describe("an accounts file's `rate:` on an existing database", () => {
  const accountsFile = (primary: string, backup: string) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lh-rate-accounts-'));
    const file = path.join(dir, 'accounts.yaml');
    writeFileSync(file, `accounts:\n  - { name: primary, provider: sandbox, rate: ${primary} }\n  - { name: backup, provider: sandbox, rate: ${backup} }\nfailover: [primary, backup]\n`);
    return file;
  };
  const rate = async (account: string) => (await rateLimiterGet(accountsDb.pool, accountsDb.schema, null, account))!;
  let accountsDb: TestDatabase;
  beforeAll(async () => {
    accountsDb = await testDatabase('cli_rate_accounts');
  });
  afterAll(() => accountsDb.close());

  async function run(command: 'delivery-worker' | 'api', file: string): Promise<Child> {
    const child = startNode(cliPath, [command], { ...accountsDb.env, PORT: '0', LEASEHOLD_API_TOKEN: TOKEN, LOG_LEVEL: 'info', LEASEHOLD_ACCOUNTS_FILE: file });
    await child.waitForLine(command === 'api' ? /leasehold API listening on / : /delivery lane running/, 60_000);
    await stop(child);
    return child;
  }

  it('each account takes its own changed rate at the next delivery start; a process that does not send changes none', async () => {
    await run('delivery-worker', accountsFile('{ perSecond: 10, burst: 10 }', '{ perSecond: 5, burst: 5 }'));
    const changed = accountsFile('{ perSecond: 2, burst: 1 }', '{ perSecond: 5, burst: 5 }');
    // An API alone with the new file: nothing changes.
    await run('api', changed);
    expect(await rate('primary')).toMatchObject({ perSecond: 10, burst: 10 });
    const child = await run('delivery-worker', changed);
    expect(await rate('primary')).toMatchObject({ perSecond: 2, burst: 1, source: 'configuration', setBy: 'LEASEHOLD_ACCOUNTS_FILE' });
    expect(await rate('backup')).toMatchObject({ perSecond: 5, burst: 5, source: 'configuration' });
    expect(logEvents(child.stderr(), 'rate_limit.configured').map((e) => e['account'])).toEqual(['primary']);
    const audits = (await auditList(accountsDb.pool, accountsDb.schema, { limit: 10, action: 'rate_limit.set' })).entries;
    expect(audits.map((e) => [e.actor, e.target])).toEqual([['configuration', 'primary']]);
  });
});
