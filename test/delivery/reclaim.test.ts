import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Presence } from '../../src/db/presence.js';
import { ident } from '../../src/db/pool.js';
import { LeaseReclaimer } from '../../src/delivery/reclaimer.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { silentLogger } from '../../src/observability/logger.js';
import type { SendResult } from '../../src/providers/gateway.js';
import { intentsLease, intentsLeaseOwnersGone } from '../../src/tables/outbox.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { countWhere, intentsAndLog, journalIntents, logEvents, waitForCount } from '../helpers/fleet.js';
import { insertDueHolds } from '../helpers/holds.js';
import { cliPath, startNode } from '../helpers/processes.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

/**
 * A dead delivery worker's leases are taken back as soon as its presence
 * lock is free (db/presence.ts), not when they expire: the lease here is
 * 30 s, and everything asserted is read from the database clock (the
 * re-lease started long before the first lease would have expired), never
 * from how long the test took.
 */

let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('reclaim');
  s = ident(db.schema);
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1_000_000, burst: 1_000_000 });
});
afterAll(() => db.close());

const LEASE_MS = 30_000;

/** Each reclaimed attempt (closed as lease_expired) with how long after its start the next attempt began. */
async function retakes(prefix: string, on: TestDatabase = db): Promise<Array<{ intent: string; outcome: string; afterS: number }>> {
  const t = ident(on.schema);
  const { rows } = await on.pool.query<{ intent: string; outcome: string; after_s: number }>(
    `SELECT a.intent_id AS intent, a.outcome, extract(epoch FROM b.started_at - a.started_at)::float8 AS after_s
       FROM ${t}.email_attempts a JOIN ${t}.email_attempts b ON b.intent_id = a.intent_id AND b.attempt = a.attempt + 1
      WHERE a.intent_id LIKE $1 ORDER BY 1`,
    [`%:${prefix}-%`],
  );
  return rows.map((r) => ({ intent: r.intent, outcome: r.outcome, afterS: r.after_s }));
}

/** A session holding a worker's presence lock, as the LISTEN session does in the service. */
async function presenceSession(presence: Presence): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.url });
  // Ended on purpose by the tests; an error after that is expected, not a crash.
  client.on('error', () => {});
  await client.connect();
  await presence.acquire(client);
  return client;
}

describe('leases of a worker that is gone', () => {
  it('are reclaimed by another worker long before they expire, recorded as lease_expired, and the returning owner is fenced', async () => {
    await insertDueHolds(db.pool, db.schema, 5, { prefix: 'gone' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema, logger: silentLogger }).runOnce();
    // Worker A leases holding its presence lock; its sends hang until released.
    const presenceA = new Presence(db.schema, silentLogger);
    const sessionA = await presenceSession(presenceA);
    const releaseA: Array<(result: SendResult) => void> = [];
    const gatewayA = new ScriptedGateway(() => new Promise<SendResult>((resolve) => releaseA.push(resolve)));
    const a = new DeliveryWorker({
      pool: db.pool,
      schema: db.schema,
      gateway: gatewayA,
      leaseMs: LEASE_MS,
      from: 'Support <support@leasehold.test>',
      logger: silentLogger,
      presence: presenceA,
      reclaimIntervalMs: 0,
    });
    const roundA = a.runOnce();
    await waitForCount(async () => releaseA.length, 5, 10_000, 'sends held by A');
    expect(await countWhere(db.pool, db.schema, 'email_attempts', `worker = ${presenceA.owner!} AND finished_at IS NULL`)).toBe(5);
    // A's session ends (its process died, or it was cut off): its lock is free.
    await sessionA.end();

    const metrics = createMetrics();
    const gatewayB = new ScriptedGateway({ kind: 'accepted', receipt: 'b' });
    const b = new DeliveryWorker({
      pool: db.pool,
      schema: db.schema,
      gateway: gatewayB,
      leaseMs: LEASE_MS,
      pollIntervalMs: 50,
      from: 'Support <support@leasehold.test>',
      logger: silentLogger,
      metrics,
      reclaimIntervalMs: 50,
      reclaimGraceMs: 200,
    });
    b.start();
    try {
      await waitForCount(() => countWhere(db.pool, db.schema, 'email_outbox', `state = 'sent' AND id LIKE '%:gone-%'`), 5, 15_000, 'sent by B');
    } finally {
      await b.stop();
    }
    const taken = await retakes('gone');
    expect(taken).toHaveLength(5);
    for (const t of taken) {
      // Closed exactly as an expired lease is: the outcome unknown.
      expect(t.outcome).toBe('lease_expired');
      expect(t.afterS).toBeLessThan(LEASE_MS / 1000 / 2);
    }
    expect(gatewayB.calls).toHaveLength(5);
    // The intents were flagged as having had an ambiguous attempt, so a
    // provider without idempotency keys flags the acceptance.
    expect(gatewayB.calls.every((c) => c.context.previousOutcomeUnknown)).toBe(true);
    expect((await metrics.registry.getSingleMetric('leasehold_email_leases_reclaimed_total')!.get()).values[0]!.value).toBe(5);

    // A comes back and reports failures: fenced, nothing changes on the intents.
    for (const release of releaseA) release({ kind: 'failed', reason: 'late', outcomeUnknown: false });
    const late = await roundA;
    expect(late.outcomes).toEqual({ failed: 5 });
    expect(await countWhere(db.pool, db.schema, 'email_outbox', `id LIKE '%:gone-%' AND state = 'sent' AND failed_attempts = 0`)).toBe(5);
    expect(await countWhere(db.pool, db.schema, 'email_attempts', `intent_id LIKE '%:gone-%' AND outcome = 'failed'`)).toBe(0);
  });

  it('name no owner when the worker believes it has a presence the server no longer holds', async () => {
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'stale' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema, logger: silentLogger }).runOnce();
    // 424242's lock is held by nobody: as for a worker whose session was
    // dropped by the server while it has not noticed yet (a partition).
    await intentsLease(db.pool, db.schema, { limit: 2, leaseMs: LEASE_MS, token: crypto.randomUUID(), provider: 'test', now: null, owner: 424242 });
    expect(await countWhere(db.pool, db.schema, 'email_attempts', `intent_id LIKE '%:stale-%' AND finished_at IS NULL AND worker IS NULL`)).toBe(2);
  });

  it('are left alone while their owner holds its lock, and taken only after the owner has been gone for the grace period', async () => {
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'grace' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema, logger: silentLogger }).runOnce();
    const presence = new Presence(db.schema, silentLogger);
    const session = await presenceSession(presence);
    const owner = presence.owner!;
    expect(owner).toBeGreaterThan(0);
    const leased = await intentsLease(db.pool, db.schema, { limit: 3, leaseMs: LEASE_MS, token: crypto.randomUUID(), provider: 'test', now: null, owner });
    expect(leased).toHaveLength(3);

    let now = 1_000_000;
    const reclaimed: number[] = [];
    const reclaimer = new LeaseReclaimer({
      pool: db.pool,
      schema: db.schema,
      graceMs: 1000,
      logger: silentLogger,
      onReclaimed: (n) => reclaimed.push(n),
      now: () => now,
    });
    // Alive: never a suspect, however long.
    await reclaimer.tick();
    now += 60_000;
    await reclaimer.tick();
    expect(reclaimed).toEqual([]);

    // The owner's connection ends (its process died): the lock is free.
    await session.end();
    // The server frees the lock as the backend exits, a moment after the client is done.
    await waitForCount(async () => ((await intentsLeaseOwnersGone(db.pool, db.schema)).includes(owner) ? 1 : 0), 1, 5000, 'the lock freed');
    await reclaimer.tick();
    expect(reclaimed).toEqual([]);
    now += 999;
    await reclaimer.tick();
    expect(reclaimed).toEqual([]);
    now += 1;
    await reclaimer.tick();
    expect(reclaimed).toEqual([3]);
    // Reclaimed once: the leases are over, nothing more to take.
    now += 5000;
    await reclaimer.tick();
    expect(reclaimed).toEqual([3]);
    const { rows } = await db.pool.query<{ over: boolean }>(
      `SELECT lease_expires_at <= now() AS over FROM ${s}.email_outbox WHERE id LIKE '%:grace-%'`,
    );
    expect(rows.map((r) => r.over)).toEqual([true, true, true]);
  });

  it("run on the worker's presence session while it holds one, so a reclaim never waits for a pooled connection", async () => {
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'own-session' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema, logger: silentLogger }).runOnce();
    const dead = new Presence(db.schema, silentLogger);
    const deadSession = await presenceSession(dead);
    const owner = dead.owner!;
    await intentsLease(db.pool, db.schema, { limit: 2, leaseMs: LEASE_MS, token: crypto.randomUUID(), provider: 'test', now: null, owner });
    await deadSession.end();
    await waitForCount(async () => ((await intentsLeaseOwnersGone(db.pool, db.schema)).includes(owner) ? 1 : 0), 1, 5000, 'the lock freed');

    // The reclaiming worker's pool is exhausted (every connection busy); its presence session is free.
    const busy = new pg.Pool({ connectionString: db.url, max: 1, connectionTimeoutMillis: 200 });
    const held = await busy.connect();
    const alive = new Presence(db.schema, silentLogger);
    const aliveSession = await presenceSession(alive);
    let now = 0;
    const reclaimed: number[] = [];
    const reclaimer = new LeaseReclaimer({
      pool: busy,
      session: () => alive.session,
      schema: db.schema,
      graceMs: 100,
      logger: silentLogger,
      onReclaimed: (n) => reclaimed.push(n),
      now: () => now,
    });
    try {
      await reclaimer.tick();
      now += 100;
      await reclaimer.tick();
      expect(reclaimed).toEqual([2]);
      // Without the session it would have had to wait for the pool, and here give up.
      await aliveSession.end();
      alive.lost();
      await expect(reclaimer.tick()).rejects.toThrow(/timeout/i);
    } finally {
      held.release();
      await busy.end();
    }
  });

  it('a SIGKILLed delivery-worker process: another process sends its intents without waiting out its 30 s lease', async () => {
    // A schema of its own: the tests above leave due intents behind, which
    // A's first rounds would take (with its 8 s sends) before the ones
    // this test is about.
    const kill = await testDatabase('reclaim_kill');
    await rateLimiterSet(kill.pool, kill.schema, { perSecond: 1_000_000, burst: 1_000_000 });
    const dir = await mkdtemp(path.join(tmpdir(), 'lh-reclaim-'));
    const env = { ...kill.env, LOG_LEVEL: 'info', LEASEHOLD_LEASE_MS: String(LEASE_MS), EMAIL_FROM: 'Support <support@leasehold.test>' };
    // A's sends take 8 s: it is killed with all of them in flight.
    const a = startNode(cliPath, ['delivery-worker'], { ...env, SANDBOX_LATENCY_MS: '8000', SANDBOX_JOURNAL: path.join(dir, 'a.jsonl') });
    const journalB = path.join(dir, 'b.jsonl');
    let b: ReturnType<typeof startNode> | undefined;
    try {
      await a.waitForLine(/delivery lane running/, 30_000);
      await waitForCount(async () => logEvents(a.stderr(), 'presence.held').length, 1, 15_000, 'presence of A');
      await insertDueHolds(kill.pool, kill.schema, 6, { prefix: 'kill' });
      await new ExpiryWorker({ pool: kill.pool, schema: kill.schema, logger: silentLogger }).runOnce();
      await waitForCount(
        () => countWhere(kill.pool, kill.schema, 'email_attempts', `intent_id LIKE '%:kill-%' AND finished_at IS NULL AND worker IS NOT NULL`),
        6,
        15_000,
        'leased by A',
        () => intentsAndLog(kill.pool, kill.schema, '%', a.stderr()),
      );
      a.process.kill('SIGKILL');
      await a.exited;

      b = startNode(cliPath, ['delivery-worker'], { ...env, SANDBOX_JOURNAL: journalB });
      await waitForCount(() => countWhere(kill.pool, kill.schema, 'email_outbox', `state = 'sent' AND id LIKE '%:kill-%'`), 6, 25_000, 'sent by B');
      const taken = await retakes('kill', kill);
      expect(taken).toHaveLength(6);
      for (const t of taken) {
        expect(t.outcome).toBe('lease_expired');
        expect(t.afterS).toBeLessThan(LEASE_MS / 1000);
      }
      const sentByB = (await journalIntents(journalB)).filter((id) => id.includes(':kill-'));
      expect(sentByB.sort()).toEqual(taken.map((t) => t.intent).sort());
      expect(await journalIntents(path.join(dir, 'a.jsonl'))).toEqual([]);
      b.process.kill('SIGTERM');
      await b.exited;
      // Exactly A's six: nothing else in this schema was leased.
      expect(logEvents(b.stderr(), 'lease.reclaimed').reduce((n, e) => n + (e.intents as number), 0)).toBe(6);
    } finally {
      for (const child of [a, b]) if (child && child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
      await kill.close();
    }
  }, 60_000);
});
