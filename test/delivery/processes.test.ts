import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deliveryPause, deliveryResume } from '../../src/tables/delivery-control.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { attemptsList } from '../../src/tables/attempts.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { acceptedStartTimes, waitForSent, worstWindowExcess } from '../helpers/fleet.js';
import { insertDueHolds } from '../helpers/holds.js';
import { fixture, kill9, startNode, type Child } from '../helpers/processes.js';

let db: TestDatabase;
beforeEach(async () => {
  db = await testDatabase('delivery_proc');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
});
afterEach(() => db.close());

async function expireAll(): Promise<void> {
  const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, batchSize: 1000 });
  while ((await worker.runOnce()).full);
}

/** Make every live lease expire now, instead of waiting out the lease. */
async function expireLeases(): Promise<void> {
  await db.pool.query(
    `UPDATE ${ident(db.schema)}.email_outbox
        SET available_at = now() - interval '1 ms', lease_expires_at = now() - interval '1 ms'
      WHERE lease_token IS NOT NULL`,
  );
}

async function journal(file: string): Promise<Array<{ intentId: string; idempotencyKey: string; attempt: number }>> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

describe('delivery crash windows', () => {
  it('killed after the provider accepted and before the receipt was saved: exactly one more attempt, same intent id, flagged', async () => {
    const [holdId] = await insertDueHolds(db.pool, db.schema, 1);
    await expireAll();
    const intentId = `reservation-expired:${holdId}`;
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'lh-journal-')), 'sent.jsonl');

    const crashing = startNode(fixture('delivery-child'), ['--crash-at', 'delivery.accepted', '--journal', file], db.env);
    await crashing.waitForLine(/^FAULT delivery\.accepted/);
    await kill9(crashing);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'pending', leased: true, attempts: 1 });
    expect((await attemptsList(db.pool, db.schema, intentId))[0]).toMatchObject({ outcome: null, finishedAt: null });

    await expireLeases();
    const next = startNode(fixture('delivery-child'), ['--journal', file], db.env);
    await next.waitForLine(/^DONE 1/);

    const sends = await journal(file);
    expect(sends).toHaveLength(2); // the documented duplicate: the sandbox cannot deduplicate
    expect(sends.map((s) => s.intentId)).toEqual([intentId, intentId]);
    expect(sends.map((s) => s.idempotencyKey)).toEqual([intentId, intentId]);
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({
      state: 'sent',
      attempts: 2,
      leaseExpirations: 1,
      possibleDuplicate: true,
    });
    const attempts = await attemptsList(db.pool, db.schema, intentId);
    expect(attempts.map((a) => a.outcome)).toEqual(['lease_expired', 'accepted']);
  });

  it('killed mid-lease, before sending: the intent is re-leased after the lease expires and sent once', async () => {
    const [holdId] = await insertDueHolds(db.pool, db.schema, 1);
    await expireAll();
    const intentId = `reservation-expired:${holdId}`;
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'lh-journal-')), 'sent.jsonl');

    const crashing = startNode(fixture('delivery-child'), ['--crash-at', 'delivery.leased', '--journal', file], db.env);
    await crashing.waitForLine(/^FAULT delivery\.leased/);
    await kill9(crashing);

    // Before the lease expires nobody may take it.
    const early = startNode(fixture('delivery-child'), ['--journal', file], db.env);
    await early.waitForLine(/^DONE 0/);
    await expireLeases();
    const late = startNode(fixture('delivery-child'), ['--journal', file], db.env);
    await late.waitForLine(/^DONE 1/);

    expect((await journal(file)).map((s) => s.intentId)).toEqual([intentId]);
    // The database cannot tell "died before the send" from "died during it", so
    // the acceptance is honestly flagged; the journal shows it went out once.
    expect(await intentsGet(db.pool, db.schema, intentId)).toMatchObject({ state: 'sent', leaseExpirations: 1, possibleDuplicate: true });
    expect((await attemptsList(db.pool, db.schema, intentId)).map((a) => a.outcome)).toEqual(['lease_expired', 'accepted']);
  });
});

describe('three delivery processes sharing one limiter', () => {
  it('never exceed burst + perSecond * t, drain at the rate, stop within a second of a pause and resume without a burst', async () => {
    const perSecond = 40;
    const burst = 8;
    await rateLimiterSet(db.pool, db.schema, { perSecond, burst });
    await insertDueHolds(db.pool, db.schema, 160, { prefix: 'a' });
    await expireAll();
    // Let the bucket fill so the run starts with a full burst.
    await new Promise((r) => setTimeout(r, 250));
    const children: Child[] = [0, 1, 2].map(() => startNode(fixture('delivery-child'), ['--loop', '--concurrency', '8'], db.env));
    try {
      await Promise.all(children.map((c) => c.waitForLine(/^READY/)));
      await waitForSent(db.pool, db.schema, 160, 20_000);
      const phaseA = await acceptedStartTimes(db.pool, db.schema);
      const elapsed = phaseA.at(-1)! - phaseA[0]!;
      const achieved = (phaseA.length - burst) / elapsed;
      expect(achieved).toBeGreaterThanOrEqual(0.95 * perSecond);
      expect(worstWindowExcess(phaseA, perSecond, burst)).toBeLessThanOrEqual(0);

      // Pause mid-drain: nothing is sent more than a second after the pause.
      await insertDueHolds(db.pool, db.schema, 120, { prefix: 'b' });
      await expireAll();
      await waitForSent(db.pool, db.schema, 200, 10_000);
      const pausedAt = (await db.pool.query<{ t: number }>('SELECT extract(epoch FROM now())::float8 AS t')).rows[0]!.t;
      await deliveryPause(db.pool, db.schema, { reason: 'drill', by: 'operator' });
      await new Promise((r) => setTimeout(r, 1500));
      const duringPause = await acceptedStartTimes(db.pool, db.schema);
      expect(duringPause.filter((t) => t > pausedAt + 1).length).toBe(0);
      expect(duringPause.length).toBeLessThan(280);

      await deliveryResume(db.pool, db.schema);
      await waitForSent(db.pool, db.schema, 280, 20_000);
      const all = await acceptedStartTimes(db.pool, db.schema);
      expect(worstWindowExcess(all, perSecond, burst)).toBeLessThanOrEqual(0);
      const afterResume = all.filter((t) => t > pausedAt + 1);
      expect(afterResume.length).toBe(280 - duringPause.length);
    } finally {
      for (const child of children) child.process.kill('SIGTERM');
      await Promise.all(children.map((c) => c.exited));
    }
  }, 60_000);
});
