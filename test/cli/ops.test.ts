import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryControlGet } from '../../src/tables/delivery-control.js';
import { rateLimiterGet } from '../../src/tables/rate-limiter.js';
import { ident } from '../../src/db/pool.js';
import { createHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { runCli } from '../helpers/cli.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_ops');
});
afterAll(() => db.close());

const cli = (...args: string[]) => runCli(args, db.env);

describe('usage', () => {
  it.each(['api', 'trace', 'pause', 'resume', 'replay', 'rate-limit', 'status'])('%s --help exits 0 with usage', async (command) => {
    const res = await runCli([command, '--help'], {});
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`^Usage: leasehold ${command}`));
  });

  it.each([
    [['trace'], /missing required argument 'holdId'/],
    [['trace', 'bad id!'], /holdId/],
    [['replay', '<script>'], /intent id/],
    [['rate-limit', '--per-second', 'fast'], /--per-second/],
    [['rate-limit', '--burst', '2.5'], /--burst/],
    [['pause', '--reason', '  '], /--reason/],
    [['pause', '--for', '-3'], /--for/],
    [['status', '--colour'], /unknown option/],
    [['frobnicate'], /unknown command/],
  ])('%j is a usage error: exit 2 and one clear line', async (args, pattern) => {
    const res = await cli(...args);
    expect(res.code).toBe(2);
    expect(res.stderr.split('\n')[0]).toMatch(pattern);
    expect(res.stdout).toBe('');
  });

  it('invalid configuration exits 2 naming the variable', async () => {
    const res = await runCli(['status'], { ...db.env, LEASEHOLD_EMAIL_PROMISE_S: 'soon' });
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toMatch(/^leasehold: invalid configuration: LEASEHOLD_EMAIL_PROMISE_S/);
  });
});

describe('trace', () => {
  it('shows the four moments and every attempt, without the address', async () => {
    await createHold(db.pool, { id: 'tr-1', customerEmail: 'trace.me@example.com', ttlSeconds: 600 }, { schema: db.schema });
    const s = ident(db.schema);
    await db.pool.query(`UPDATE ${s}.support_reservations SET expires_at = now() - interval '3 seconds' WHERE id = 'tr-1'`);
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    await db.pool.query(
      `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, provider_status, provider_code, error, receipt, duration_ms)
       VALUES ('reservation-expired:tr-1', 1, gen_random_uuid(), 'sandbox', now(), now(), 'rate_limited', 429, 'rate_limit_exceeded', 'slow down', NULL, 7),
              ('reservation-expired:tr-1', 2, gen_random_uuid(), 'sandbox', now(), now(), 'accepted', 200, NULL, NULL, 'rcpt-9', 9)`,
    );
    await db.pool.query(
      `UPDATE ${s}.email_outbox SET state = 'sent', attempts = 2, sent_at = now(), finished_at = now(), receipt = 'rcpt-9' WHERE id = 'reservation-expired:tr-1'`,
    );
    const res = await cli('trace', 'tr-1');
    expect(res.code, res.stderr).toBe(0);
    const out = res.stdout;
    expect(out).toMatch(/^hold tr-1: expired/);
    for (const moment of ['1. became eligible', '2. was expired', '3. email available', '4. email accepted']) expect(out).toContain(moment);
    expect(out).toMatch(/expiry email reservation-expired:tr-1: sent, 2 attempt\(s\).*receipt rcpt-9/);
    expect(out).toMatch(/#1 .*rate_limited .*429 rate_limit_exceeded/);
    expect(out).toMatch(/#2 .*accepted .*receipt rcpt-9/);
    expect(out).not.toContain('trace.me@example.com');

    const json = await cli('trace', 'tr-1', '--json');
    const parsed = JSON.parse(json.stdout);
    expect(parsed.moments.emailAcceptedAt).toBe(parsed.intent.sentAt);
    expect(parsed.attempts).toHaveLength(2);
    expect(json.stdout).not.toContain('trace.me@example.com');
  });

  it('an unknown hold is a failure: exit 1', async () => {
    const res = await cli('trace', 'no-such-hold');
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe('leasehold: hold "no-such-hold" does not exist');
  });
});

describe('pause, resume, replay, rate-limit', () => {
  it('pause with a reason and resume act fleet-wide through the database', async () => {
    const paused = await cli('pause', '--reason', 'drill: provider maintenance');
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout.trim()).toBe('delivery paused: drill: provider maintenance');
    expect(await deliveryControlGet(db.pool, db.schema)).toMatchObject({ paused: true, reason: 'drill: provider maintenance', pausedBy: 'operator' });
    const resumed = await cli('resume');
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('delivery resumed (was paused: drill: provider maintenance)');
    expect((await deliveryControlGet(db.pool, db.schema)).paused).toBe(false);
  });

  it('replay sends a finished intent again; a pending one is refused with exit 1', async () => {
    const res = await cli('replay', 'reservation-expired:tr-1');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout.trim()).toBe(
      'intent reservation-expired:tr-1 is pending again (replay 1); its message will be rendered again from the current templates',
    );
    expect(await intentsGet(db.pool, db.schema, 'reservation-expired:tr-1')).toMatchObject({ state: 'pending', replays: 1 });
    const again = await cli('replay', 'reservation-expired:tr-1');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already pending');
    // A hold id where the intent id belongs: the answer names the hold's intents.
    const holdId = await cli('replay', 'tr-1');
    expect(holdId.code).toBe(1);
    expect(holdId.stderr).toContain('intent "tr-1" does not exist; did you mean reservation-expired:tr-1?');
  });

  it('rate-limit shows the policy, sets both, or one keeping the other', async () => {
    const shown = await cli('rate-limit');
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^rate limit: 10\/s, burst 10/);
    expect((await cli('rate-limit', '--per-second', '5', '--burst', '7')).stdout.trim()).toBe('rate limit set: 5/s, burst 7');
    expect((await cli('rate-limit', '--burst', '3')).stdout.trim()).toBe('rate limit set: 5/s, burst 3');
    expect(await rateLimiterGet(db.pool, db.schema)).toMatchObject({ perSecond: 5, burst: 3 });
  });
});

describe('status', () => {
  it('shows both lanes, ages against their promises, sends, limiter and pause', async () => {
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'late', pastSeconds: 600 });
    // The attempts written in beforeAll count as sends of the last minute only
    // if they finished within it: date them now, however long the tests before
    // this one took on a loaded machine.
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_attempts SET finished_at = now() WHERE intent_id = 'reservation-expired:tr-1'`);
    await cli('pause', '--reason', 'status check');
    const res = await runCli(['status'], { ...db.env, LEASEHOLD_EXPIRY_PROMISE_S: '60' });
    // Not ok is exit 1, so a script or health check can use the command; the report is still printed in full.
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr.trim()).toBe('leasehold: status: overall NOT OK');
    const out = res.stdout;
    expect(out).toMatch(/due holds\s+3/);
    expect(out).toMatch(/oldest due hold age\s+10m\d+s\s+\(promise 1m0s: BROKEN\)/);
    expect(out).toMatch(/backlog \(pending\)\s+1/);
    expect(out).toMatch(/oldest pending age\s+.*promise 15m0s: kept/);
    expect(out).toMatch(/sends, last minute\s+accepted 1, rate_limited 1/);
    expect(out).toMatch(/rate limit\s+5\/s, burst 3/);
    expect(out).toMatch(/delivery\s+PAUSED: status check \(by operator/);
    expect(out).toMatch(/overall: NOT OK/);

    const asJson = await cli('status', '--json');
    expect(asJson.code).toBe(1);
    const json = JSON.parse(asJson.stdout);
    expect(json.stats.expiry.dueHolds).toBe(3);
    expect(json.stats.control.paused).toBe(true);
    expect(json.healthy).toBe(false);
    await cli('resume');
  });

  it('exits 0 once the health is ok again, and 1 while the database cannot be reached', async () => {
    const s = ident(db.schema);
    await db.pool.query(`DELETE FROM ${s}.support_reservations WHERE status = 'held' AND expires_at <= now()`);
    const ok = await cli('status');
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/overall: ok/);
    expect(ok.stderr).toBe('');
    const unreachable = await runCli(['status'], { ...db.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', LEASEHOLD_DB_CONNECT_TIMEOUT_MS: '2000' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stdout).toBe('');
  });
});
