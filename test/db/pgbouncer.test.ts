import pg from 'pg';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { intentsChannel, Listener, notifyIntents } from '../../src/db/listener.js';
import { loadMigrations } from '../../src/db/migrate.js';
import { createPool, ident } from '../../src/db/pool.js';
import { preparedRefused } from '../../src/db/prepared.js';
import { holdsExpireDueWithOutlook } from '../../src/tables/holds.js';
import { silentLogger } from '../../src/observability/logger.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { acceptedStartTimes, countWhere, fleetEnv, insertStaggeredHolds, journalIntents, logEvents, waitForCount, worstWindowExcess } from '../helpers/fleet.js';
import { bouncerVersion, pgbouncerBinary, startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { cliPath, startNode, type Child } from '../helpers/processes.js';

/**
 * leasehold behind a real PgBouncer in transaction mode, the pooler mode
 * where LISTEN and session state do not survive a statement. Needs the
 * `pgbouncer` binary (Debian: apt-get install pgbouncer); without it the
 * tests are skipped, and say so in their name.
 */
const binary = pgbouncerBinary();
const skipped = binary ? '' : ' [SKIPPED: pgbouncer not installed; apt-get install pgbouncer]';

let bouncer: PgBouncer;
beforeAll(async () => {
  if (binary) bouncer = await startPgBouncer(inject('databaseUrl'), { poolMode: 'transaction', serverPoolSize: 4 });
});
afterAll(async () => {
  await bouncer?.stop();
});

describe.skipIf(!binary)(`behind PgBouncer in transaction mode${skipped}`, () => {
  it('`leasehold migrate` from three processes at once applies each migration once', async () => {
    const db = await testDatabase('bouncer_migrate');
    const schema = `${db.schema}_fresh`;
    try {
      const env = { ...db.env, DATABASE_URL: bouncer.url, LEASEHOLD_SCHEMA: schema };
      const children = Array.from({ length: 3 }, () => startNode(cliPath, ['migrate'], env));
      const exits = await Promise.all(children.map((c) => c.exited));
      expect(exits.map((e) => e.code), children.map((c) => c.stderr()).join('\n')).toEqual([0, 0, 0]);
      const { rows } = await db.pool.query<{ id: number }>(`SELECT id FROM ${ident(schema)}.migrations ORDER BY id`);
      expect(rows.map((r) => r.id)).toEqual((await loadMigrations()).map((m) => m.id));
      // No migration lock of this schema left behind on a pooled server
      // connection (other test files migrate their own schemas meanwhile:
      // only this schema's key counts). A bigint key shows as its two halves.
      const locks = await db.pool.query<{ n: number }>(
        `WITH k AS (SELECT hashtextextended('leasehold.migrate:' || $1, 0) AS key)
         SELECT count(*)::int AS n FROM pg_locks l, k
          WHERE l.locktype = 'advisory' AND l.objsubid = 1
            AND l.classid::bigint = (k.key >> 32) & 4294967295 AND l.objid::bigint = k.key & 4294967295`,
        [schema],
      );
      expect(locks.rows[0]!.n).toBe(0);
    } finally {
      await db.pool.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`);
      await db.close();
    }
  });

  it('the expiry batch, a named statement on its pool, runs unnamed once the bouncer loses its name: every batch answers and every hold expires once', async () => {
    const db = await testDatabase('bouncer_prepared');
    const pool = createPool({ connectionString: bouncer.url, max: 1 });
    const other = new pg.Client({ connectionString: bouncer.url });
    const otherErrors: Error[] = [];
    other.on('error', (error) => otherErrors.push(error));
    try {
      await other.connect();
      await insertDueHolds(db.pool, db.schema, 6);
      const expire = () => holdsExpireDueWithOutlook(pool, db.schema, 3, null, null, null);
      // Prepared on the server connection the bouncer gives the first batch.
      const first = await expire();
      // PgBouncer hands out its idle server connections last in, first out:
      // another client's open transaction takes the one just used, so the
      // next batch runs on a server connection that has no such name.
      await other.query('BEGIN');
      await other.query('SELECT 1');
      const second = await expire();
      await other.query('COMMIT');
      const expired = [...first.expired, ...second.expired].map((h) => h.id);
      expect(expired).toHaveLength(6);
      expect(new Set(expired).size).toBe(6);
      expect(await countWhere(db.pool, db.schema, 'support_reservations', `status = 'expired'`)).toBe(6);
      expect(await countWhere(db.pool, db.schema, 'email_outbox', 'true')).toBe(6);
      // Refused and run unnamed: PgBouncer keeps names across server connections only from 1.22 (max_prepared_statements, on by default).
      expect(preparedRefused(pool)).toBe(bouncerVersion(binary!) < 1.22);
      expect(otherErrors).toEqual([]);
    } finally {
      await other.end().catch(() => {});
      await pool.end();
      await db.close();
    }
  });

  it('a LISTEN through the bouncer is detected as deaf and given up once; a direct LISTEN_URL hears the NOTIFY sent through it', async () => {
    const db = await testDatabase('bouncer_listen');
    const pool = createPool({ connectionString: bouncer.url, max: 2 });
    const channel = intentsChannel(db.schema);
    const probe = (payload: string) => notifyIntents(pool, db.schema, payload);
    try {
      let unavailable = 0;
      const deaf = new Listener(bouncer.url, channel, () => {}, silentLogger, { probe, probeTimeoutMs: 2000, onUnavailable: () => unavailable++ });
      let wakes = 0;
      const direct = new Listener(db.url, channel, () => wakes++, silentLogger, { probe, probeTimeoutMs: 2000 });
      deaf.start();
      direct.start();
      await expect.poll(() => unavailable, { timeout: 10_000 }).toBe(1);
      const before = wakes;
      await notifyIntents(pool, db.schema); // the expiry lane's NOTIFY, through the bouncer
      await expect.poll(() => wakes, { timeout: 5000 }).toBeGreaterThan(before);
      await Promise.all([deaf.stop(), direct.stop()]);
      expect(unavailable).toBe(1);
    } finally {
      await pool.end();
      await db.close();
    }
  });

  it('two expiry and two delivery workers behind it: delivery polls (one warning each), every hold expires once, every intent is sent once, the limiter holds', async () => {
    const db = await testDatabase('bouncer_fleet');
    const dir = await mkdtemp(path.join(tmpdir(), 'lh-bouncer-'));
    const perSecond = 40;
    const burst = 8;
    const holds = 120;
    await rateLimiterSet(db.pool, db.schema, { perSecond, burst });
    const env = { ...fleetEnv(db.env, { perSecond, burst }), DATABASE_URL: bouncer.url };
    const journals = [0, 1].map((i) => path.join(dir, `sent-${i}.jsonl`));
    const expiry: Child[] = [0, 1].map(() => startNode(cliPath, ['expiry-worker'], env));
    const delivery: Child[] = journals.map((journal) => startNode(cliPath, ['delivery-worker'], { ...env, SANDBOX_JOURNAL: journal }));
    const all = [...expiry, ...delivery];
    try {
      await Promise.all(all.map((c) => c.waitForLine(/lane running/, 30_000)));
      // Each delivery worker finds its LISTEN deaf (its test NOTIFY never
      // comes) before any hold falls due: what follows is sent by polling.
      for (const child of delivery) {
        await expect.poll(() => logEvents(child.stderr(), 'listener.unavailable').length, { timeout: 15_000 }).toBe(1);
      }
      const ids = await insertStaggeredHolds(db.pool, db.schema, holds, 2000);
      await waitForCount(() => countWhere(db.pool, db.schema, 'email_outbox', `state = 'sent'`), holds, 25_000, 'intents sent');
      for (const child of all) child.process.kill('SIGTERM');
      const exits = await Promise.all(all.map((c) => c.exited));
      expect(exits.map((e) => e.code)).toEqual([0, 0, 0, 0]);

      for (const child of delivery) {
        expect(logEvents(child.stderr(), 'listener.unavailable')).toHaveLength(1);
        expect(logEvents(child.stderr(), 'listener.ready')).toHaveLength(0);
      }
      const expired = expiry.flatMap((c) => logEvents(c.stderr(), 'hold.expired').map((e) => e.holdId as string));
      expect(expired).toHaveLength(holds);
      expect(new Set(expired)).toEqual(new Set(ids));
      const sends = (await Promise.all(journals.map(journalIntents))).flat();
      expect(sends).toHaveLength(holds);
      expect(new Set(sends)).toEqual(new Set(ids.map((id) => `reservation-expired:${id}`)));
      expect(await countWhere(db.pool, db.schema, 'email_outbox', 'true')).toBe(holds);
      expect(worstWindowExcess(await acceptedStartTimes(db.pool, db.schema), perSecond, burst)).toBeLessThanOrEqual(0);
    } finally {
      for (const child of all) if (child.process.exitCode === null) child.process.kill('SIGKILL');
      await Promise.all(all.map((c) => c.exited));
      await rm(dir, { recursive: true, force: true });
      await db.close();
    }
  }, 60_000);
});
