import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { presenceNamespaceSql } from '../../src/db/presence.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import {
  acceptedStartTimes,
  countWhere,
  fleetEnv,
  insertStaggeredHolds,
  journalIntents,
  logEvents,
  waitForCount,
  worstWindowExcess,
} from '../helpers/fleet.js';
import { cliPath, startNode, type Child } from '../helpers/processes.js';

/**
 * "Many machines" on one: four `leasehold expiry-worker` and four
 * `leasehold delivery-worker` processes (the real CLI, as deploy/ runs them)
 * on one schema, while holds fall due under them. Everything asserted is an
 * invariant: who expired and who sent what, from the processes' own log
 * events and sandbox journals, and the limiter bound over every window of
 * the attempts' started_at (stamped when the permit was taken).
 */

let db: TestDatabase;
let dir: string;
beforeEach(async () => {
  db = await testDatabase('fleet');
  dir = await mkdtemp(path.join(tmpdir(), 'lh-fleet-'));
});
afterEach(async () => {
  await db.close();
  await rm(dir, { recursive: true, force: true });
});

const PROCESSES = 4;
const HOLDS = 240;
const perSecond = 40;
const burst = 8;

describe('four expiry and four delivery processes on one schema', () => {
  it('expire every hold exactly once, send every intent exactly once, and keep sends within burst + perSecond * t', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond, burst });
    // One round of 8 per process, each send taking 5-25 ms.
    const env = { ...fleetEnv(db.env, { perSecond, burst }), LEASEHOLD_DELIVERY_CONCURRENCY: '8', SANDBOX_LATENCY_MS: '5-25' };
    const journals = Array.from({ length: PROCESSES }, (_, i) => path.join(dir, `sent-${i}.jsonl`));
    const expiry: Child[] = Array.from({ length: PROCESSES }, () => startNode(cliPath, ['expiry-worker'], env));
    const delivery: Child[] = journals.map((journal) => startNode(cliPath, ['delivery-worker'], { ...env, SANDBOX_JOURNAL: journal }));
    const all = [...expiry, ...delivery];
    try {
      await Promise.all(expiry.map((c) => c.waitForLine(/expiry lane running/, 30_000)));
      await Promise.all(delivery.map((c) => c.waitForLine(/delivery lane running/, 30_000)));

      const ids = await insertStaggeredHolds(db.pool, db.schema, HOLDS, 3000);
      const sent = () => countWhere(db.pool, db.schema, 'email_outbox', `state = 'sent'`);
      await waitForCount(sent, HOLDS, 25_000, 'intents sent');

      // One LISTEN session per delivery process, each checked by its own
      // test NOTIFY and holding that process's presence lock for this schema.
      const listeners = await db.pool.query<{ n: number }>(
        `SELECT count(DISTINCT a.pid)::int AS n
           FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
          WHERE a.application_name = 'leasehold-listener' AND l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
            AND l.classid = ${presenceNamespaceSql('$1')}::int8::oid`,
        [db.schema],
      );
      expect(listeners.rows[0]!.n).toBe(PROCESSES);

      // Stop all eight: each drains and exits 0.
      for (const child of all) child.process.kill('SIGTERM');
      const exits = await Promise.all(all.map((c) => c.exited));
      expect(exits.map((e) => e.code)).toEqual(all.map(() => 0));

      // Expiry, exactly once: each hold expired by exactly one process...
      const expiredBy = expiry.map((c) => logEvents(c.stderr(), 'hold.expired').map((e) => e.holdId as string));
      const expired = expiredBy.flat();
      expect(expired).toHaveLength(HOLDS);
      expect(new Set(expired)).toEqual(new Set(ids));
      // ...and the work was really shared.
      expect(expiredBy.filter((list) => list.length > 0).length, `holds expired per process: ${expiredBy.map((l) => l.length)}`).toBeGreaterThanOrEqual(2);
      expect(await countWhere(db.pool, db.schema, 'support_reservations', `status = 'expired' AND expired_at IS NOT NULL`)).toBe(HOLDS);
      const perHold = await db.pool.query<{ reservation_id: string; n: number }>(
        `SELECT reservation_id, count(*)::int AS n FROM ${ident(db.schema)}.email_outbox GROUP BY 1`,
      );
      expect(perHold.rows).toHaveLength(HOLDS);
      expect(perHold.rows.every((r) => r.n === 1)).toBe(true);

      // Delivery, exactly once: each intent accepted by the provider once, by one process.
      const sentBy = await Promise.all(journals.map(journalIntents));
      const sends = sentBy.flat();
      expect(sends).toHaveLength(HOLDS);
      expect(new Set(sends)).toEqual(new Set(ids.map((id) => `reservation-expired:${id}`)));
      expect(sentBy.filter((list) => list.length > 0).length, `sends per process: ${sentBy.map((l) => l.length)}`).toBeGreaterThanOrEqual(2);
      expect(await countWhere(db.pool, db.schema, 'email_attempts', `outcome = 'accepted'`)).toBe(HOLDS);
      expect(await countWhere(db.pool, db.schema, 'email_attempts', `outcome IS DISTINCT FROM 'accepted'`)).toBe(0);

      // The one shared limiter held across all four: no window of t seconds
      // has more than burst + perSecond * t permits taken.
      expect(worstWindowExcess(await acceptedStartTimes(db.pool, db.schema), perSecond, burst)).toBeLessThanOrEqual(0);

      for (const child of delivery) {
        expect(logEvents(child.stderr(), 'listener.ready')).toHaveLength(1);
        expect(logEvents(child.stderr(), 'listener.unavailable')).toHaveLength(0);
      }
    } finally {
      for (const child of all) if (child.process.exitCode === null) child.process.kill('SIGKILL');
      await Promise.all(all.map((c) => c.exited));
    }
  }, 60_000);
});
