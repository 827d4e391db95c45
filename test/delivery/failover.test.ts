import net from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { DeliveryWorker, type DeliveryRun } from '../../src/delivery/worker.js';
import { Operations } from '../../src/ops/operations.js';
import { holdTimeline } from '../../src/read/timeline.js';
import { formatTimeline } from '../../src/cli/commands/trace.js';
import { PostmarkGateway } from '../../src/providers/postmark.js';
import { ResendGateway } from '../../src/providers/resend.js';
import { attemptsList } from '../../src/tables/attempts.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { rateLimiterGet, rateLimiterPause, rateLimiterResume, rateLimiterSet } from '../../src/tables/rate-limiter.js';
import type { Accounts } from '../../src/model/accounts.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { FakePostmark } from '../helpers/fake-postmark.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { expireHolds } from '../helpers/provider-e2e.js';

/**
 * Two provider accounts on local stand-ins: `primary` (Resend) first in
 * failover, `backup` (Postmark) after it. Intents move to the backup only
 * when that cannot send an email twice: the primary is paused, has cooled
 * down past the failover threshold, or the request never left; an intent
 * whose attempt on the primary has an unknown outcome stays there.
 */
let db: TestDatabase;
let primary: FakeResend;
let backup: FakePostmark;
let label = 0;

beforeAll(async () => {
  db = await testDatabase('failover');
});
afterAll(() => db.close());

beforeEach(async () => {
  primary = new FakeResend();
  backup = new FakePostmark();
  await primary.start();
  await backup.start();
  // Each test starts with an empty outbox and both accounts open.
  await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET state = 'dead', finished_at = now(), lease_token = NULL WHERE state = 'pending'`);
  for (const name of ['primary', 'backup']) {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 }, null, name);
    await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET cooldown_until = NULL, cooldown_since = NULL WHERE name = $1`, [name]);
  }
  await rateLimiterResume(db.pool, db.schema, null);
});
afterEach(async () => {
  await primary.stop();
  await backup.stop();
});

const worker = (extra: Partial<ConstructorParameters<typeof DeliveryWorker>[0]> = {}) =>
  new DeliveryWorker({
    pool: db.pool,
    schema: db.schema,
    // One email per request: these stories follow single messages (test/delivery/batches.test.ts sends batches).
    accounts: [
      { name: 'primary', gateway: new ResendGateway({ apiKey: primary.apiKey, baseUrl: primary.url }), batch: 1 },
      { name: 'backup', gateway: new PostmarkGateway({ serverToken: backup.serverToken, baseUrl: backup.url }), batch: 1 },
    ],
    initialRate: { perSecond: 1000, burst: 1000 },
    // Long enough that a loaded machine's local answer never times out (a clean-clone CI run timed one out at 400 ms);
    // the timeout story sets its own.
    sendTimeoutMs: 2000,
    leaseMs: 5000,
    random: () => 0.5,
    ...extra,
  });

/** Rounds until nothing more is leased; intents backing off are made due at once (tests move time). */
async function drain(w: DeliveryWorker, rounds = 30): Promise<DeliveryRun[]> {
  const runs: DeliveryRun[] = [];
  for (let i = 0; i < rounds; i++) {
    const run = await w.runOnce();
    runs.push(run);
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET available_at = now() WHERE state = 'pending' AND lease_token IS NULL`);
    if (run.leased === 0) break;
  }
  return runs;
}

/** A port nothing listens on: connecting is refused before a byte is sent. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const resendIntents = () => primary.deliveries.map((d) => d.headers['X-Leasehold-Intent-Id']!);
const postmarkIntents = () => backup.outbound.map((m) => m.Metadata['intent_id']!);

async function rows(ids: string[]) {
  const { rows } = await db.pool.query<{ id: string; state: string; sent_account: string | null; possible_duplicate: boolean }>(
    `SELECT id, state, sent_account, possible_duplicate FROM ${ident(db.schema)}.email_outbox WHERE id = ANY ($1) ORDER BY id`,
    [ids],
  );
  return rows;
}

describe('failover between two accounts', () => {
  it('the primary answers 401 mid-run: every intent still pending ends accepted by the backup, and none is sent by both', async () => {
    const ids = await expireHolds(db, `f401-${++label}`, 20);
    const w = worker({ batchSize: 5, concurrency: 5 });
    expect((await w.runOnce()).outcomes).toEqual({ accepted: 5 });
    // From now on the primary refuses its key.
    for (let i = 0; i < 20; i++) {
      primary.queue({ status: 401, body: { statusCode: 401, name: 'missing_api_key', message: 'Missing API key in the authorization header.' } });
    }
    await drain(w);

    const sent = await rows(ids);
    expect(sent.every((r) => r.state === 'sent' && !r.possible_duplicate)).toBe(true);
    const byPrimary = sent.filter((r) => r.sent_account === 'primary').map((r) => r.id);
    const byBackup = sent.filter((r) => r.sent_account === 'backup').map((r) => r.id);
    expect(byPrimary).toHaveLength(5);
    expect(byBackup).toHaveLength(15);
    // What each stand-in actually delivered agrees, and no intent reached both.
    expect(resendIntents().sort()).toEqual(byPrimary.sort());
    expect(postmarkIntents().sort()).toEqual(byBackup.sort());
    expect(resendIntents().filter((id) => postmarkIntents().includes(id))).toEqual([]);
    // The 401 paused the primary alone, by its provider, with the reason.
    expect((await rateLimiterGet(db.pool, db.schema, null, 'primary'))!.pause).toMatchObject({ paused: true, pausedBy: 'resend' });
    expect((await rateLimiterGet(db.pool, db.schema, null, 'backup'))!.pause.paused).toBe(false);
    // Each attempt records its account: the paused ones on the primary, the acceptance on the backup.
    const moved = (await attemptsList(db.pool, db.schema, byBackup[0]!)).map((a) => [a.account, a.outcome]);
    expect(moved.at(-1)).toEqual(['backup', 'accepted']);
    // `trace` and GET /v1/holds/:id (one timeline) say which account sent each attempt.
    const timeline = await holdTimeline(db.pool, db.schema, byBackup[0]!.replace('reservation-expired:', ''));
    expect(timeline.attempts.at(-1)).toMatchObject({ account: 'backup', provider: 'postmark', outcome: 'accepted' });
    const lines = formatTimeline(timeline);
    expect(lines.some((l) => l.includes('sent by account backup'))).toBe(true);
    expect(lines.some((l) => /accepted\s+backup \(postmark\)/.test(l))).toBe(true);
  });

  it('the primary times out after the request left: that intent is not failed over, and is settled on the primary', async () => {
    const [pinned] = await expireHolds(db, `ftimeout-${++label}`, 1);
    const w = worker({ sendTimeoutMs: 400 });
    primary.processingMs = 900; // arrives, is delivered, answers after the send timeout
    expect((await w.runOnce()).outcomes).toEqual({ failed: 1 });
    await new Promise((r) => setTimeout(r, 1000)); // the stand-in finishes the send it received
    primary.processingMs = 0;
    expect(resendIntents()).toEqual([pinned]);
    expect(await intentsGet(db.pool, db.schema, pinned!)).toMatchObject({ state: 'pending', pinnedAccount: 'primary' });

    // The primary is paused now; a fresh intent goes to the backup, the pinned one waits.
    await rateLimiterPause(db.pool, db.schema, 'primary', { reason: 'key rotated', by: 'operator' });
    const [fresh] = await expireHolds(db, `ftimeout-fresh-${label}`, 1);
    await drain(w);
    expect(postmarkIntents()).toEqual([fresh]);
    expect(await intentsGet(db.pool, db.schema, pinned!)).toMatchObject({ state: 'pending' });

    // Resumed, the primary settles it: the same idempotency key, the same delivery.
    await rateLimiterResume(db.pool, db.schema, 'primary');
    await drain(w);
    const settled = (await intentsGet(db.pool, db.schema, pinned!))!;
    expect(settled).toMatchObject({ state: 'sent', sentAccount: 'primary', possibleDuplicate: false });
    expect(settled.receipt).toBe(primary.deliveries[0]!.id);
    expect(resendIntents()).toEqual([pinned]);
    expect(postmarkIntents()).not.toContain(pinned);
    expect((await attemptsList(db.pool, db.schema, pinned!)).map((a) => [a.account, a.outcome])).toEqual([
      ['primary', 'failed'],
      ['primary', 'accepted'],
    ]);
  });

  it('an operator who moves a pinned intent gets its acceptance elsewhere flagged possible_duplicate', async () => {
    const [pinned] = await expireHolds(db, `fmove-${++label}`, 1);
    const w = worker();
    primary.queue({ status: 500, body: { statusCode: 500, name: 'internal_server_error', message: 'oops' } });
    expect((await w.runOnce()).outcomes).toEqual({ failed: 1 });
    await rateLimiterPause(db.pool, db.schema, 'primary', { reason: 'provider incident', by: 'operator' });
    const accounts: Accounts = {
      accounts: [
        { name: 'primary', provider: 'resend', rate: { perSecond: 1000, burst: 1000, unit: 'requests' }, settings: {} },
        { name: 'backup', provider: 'postmark', rate: { perSecond: 1000, burst: 1000, unit: 'requests' }, settings: {} },
      ],
      failover: ['primary', 'backup'],
    };
    const ops = new Operations({ pool: db.pool, schema: db.schema, initialRate: { perSecond: 1000, burst: 1000 }, accounts });
    await ops.moveIntent(pinned!, 'backup');
    await drain(w);
    expect(await intentsGet(db.pool, db.schema, pinned!)).toMatchObject({ state: 'sent', sentAccount: 'backup', possibleDuplicate: true });
    expect(postmarkIntents()).toEqual([pinned]);
  });

  it('a send that never left the primary (connection refused) moves on to the backup at once', async () => {
    const [id] = await expireHolds(db, `frefused-${++label}`, 1);
    const closed = await closedPort();
    const w = new DeliveryWorker({
      pool: db.pool,
      schema: db.schema,
      accounts: [
        // Postmark first this time: its adapter tells a refused connection from a lost answer.
        { name: 'backup', gateway: new PostmarkGateway({ serverToken: backup.serverToken, baseUrl: `http://127.0.0.1:${closed}` }) },
        { name: 'primary', gateway: new ResendGateway({ apiKey: primary.apiKey, baseUrl: primary.url }) },
      ],
      initialRate: { perSecond: 1000, burst: 1000 },
      sendTimeoutMs: 400,
      leaseMs: 5000,
    });
    expect((await w.runOnce()).outcomes).toEqual({ failed: 1 });
    expect(await intentsGet(db.pool, db.schema, id!)).toMatchObject({ state: 'pending', account: 'primary', pinnedAccount: null });
    expect((await w.runOnce()).outcomes).toEqual({ accepted: 1 });
    expect(resendIntents()).toEqual([id]);
    expect(await intentsGet(db.pool, db.schema, id!)).toMatchObject({ state: 'sent', sentAccount: 'primary', possibleDuplicate: false });
  });

  it("an account's daily quota (UTC) sends as many as it allows; the rest move on, and the next day it sends again", async () => {
    const ids = await expireHolds(db, `fquota-${++label}`, 5);
    await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET quota_day = NULL, quota_used = 0`);
    const w = new DeliveryWorker({
      pool: db.pool,
      schema: db.schema,
      accounts: [
        { name: 'primary', gateway: new ResendGateway({ apiKey: primary.apiKey, baseUrl: primary.url }), dailyQuota: 3 },
        { name: 'backup', gateway: new PostmarkGateway({ serverToken: backup.serverToken, baseUrl: backup.url }) },
      ],
      sendTimeoutMs: 400,
      leaseMs: 5000,
    });
    await drain(w);
    expect(resendIntents()).toHaveLength(3);
    expect(postmarkIntents()).toHaveLength(2);
    expect([...resendIntents(), ...postmarkIntents()].sort()).toEqual([...ids].sort());
    expect((await rateLimiterGet(db.pool, db.schema, null, 'primary'))!.quotaUsedToday).toBe(3);

    // A new UTC day: the primary has its quota again and takes new intents.
    await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET quota_day = quota_day - 1 WHERE name = 'primary'`);
    const [next] = await expireHolds(db, `fquota-next-${label}`, 1);
    await drain(w);
    expect(resendIntents()).toContain(next);
  });

  it("a 429 storm on one account leaves the other's rate untouched; past the failover threshold its intents move", async () => {
    const ids = await expireHolds(db, `f429-${++label}`, 6);
    await rateLimiterSet(db.pool, db.schema, { perSecond: 50, burst: 20 }, null, 'backup');
    const before = (await rateLimiterGet(db.pool, db.schema, null, 'backup'))!;
    for (let i = 0; i < 6; i++) {
      primary.queue({ status: 429, headers: { 'retry-after': '120' }, body: { statusCode: 429, name: 'rate_limit_exceeded', message: 'Too many requests.' } });
    }
    const w = worker({ failoverAfterMs: 60_000 });
    expect((await w.runOnce()).outcomes).toEqual({ rate_limited: 6 });

    const cooling = (await rateLimiterGet(db.pool, db.schema, null, 'primary'))!;
    expect(cooling.cooldownUntil!.getTime()).toBeGreaterThan(Date.now() + 100_000);
    expect(cooling.tokens).toBe(0);
    const untouched = (await rateLimiterGet(db.pool, db.schema, null, 'backup'))!;
    expect(untouched).toMatchObject({ perSecond: 50, burst: 20, cooldownUntil: null });
    expect(untouched.tokens).toBeGreaterThanOrEqual(before.tokens);

    // Within the threshold the intents wait for the primary ...
    expect((await drain(w))[0]).toMatchObject({ leased: 0 });
    expect(postmarkIntents()).toEqual([]);
    // ... past it (the cooldown began two minutes ago), the backup sends them.
    await db.pool.query(`UPDATE ${ident(db.schema)}.rate_limiter SET cooldown_since = now() - interval '2 minutes' WHERE name = 'primary'`);
    await drain(w);
    expect(postmarkIntents().sort()).toEqual([...ids].sort());
    expect((await rows(ids)).every((r) => r.state === 'sent' && r.sent_account === 'backup' && !r.possible_duplicate)).toBe(true);
  });
});
