import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, ident } from '../../src/db/pool.js';
import { cliPath, startNode, type Child } from '../helpers/processes.js';

// This file restarts its database, so it runs its own embedded server
// rather than the one the rest of the suite shares.
let dir: string;
let server: EmbeddedPostgres;
let port: number;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'leasehold-faults-'));
  server = await startEmbeddedPostgres({ dataDir: dir });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});

const schema = 'faults';
const s = ident(schema);

/** The child's stderr without its JSON log lines: what a crash printed. */
const crashOutput = (child: Child) =>
  child
    .stderr()
    .split('\n')
    .filter((line) => !line.startsWith('{'))
    .join('\n')
    .slice(-3000);

/** Poll `check` until it holds; fail at once if the child process exits meanwhile. */
async function waitFor(child: Child, check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.process.exitCode !== null || child.process.signalCode !== null) {
      throw new Error(`leasehold start exited (${child.process.exitCode ?? child.process.signalCode}) while waiting for ${what}: ${crashOutput(child)}`);
    }
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr: ${child.stderr().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a leasehold process under database faults', () => {
  it('`leasehold start` survives 10 restarts and 10 rounds of terminated backends; every hold and intent ends exactly once', async () => {
    // The test's own connections are named apart so the terminations below
    // hit only the child's (its pool is "leasehold", its LISTEN connection
    // "leasehold-listener").
    const pool = createPool({ connectionString: server.url, max: 3, applicationName: 'test-observer' });
    await migrate(pool, schema);
    const child = startNode(cliPath, ['start'], {
      DATABASE_URL: server.url,
      LEASEHOLD_SCHEMA: schema,
      PORT: '0',
      LEASEHOLD_API_TOKEN: 'faults-test-token-0123456789',
      LEASEHOLD_EXPIRY_INTERVAL_MS: '20',
      // Small batches keep the expiry lane in back-to-back transactions while
      // a round's holds are due, so faults land while clients are checked out.
      LEASEHOLD_EXPIRY_BATCH: '4',
      LEASEHOLD_RATE_PER_SECOND: '2000',
      LEASEHOLD_RATE_BURST: '200',
      // A send whose result could not be recorded is retried when its lease
      // expires: keep that short.
      LEASEHOLD_LEASE_MS: '2000',
      LOG_LEVEL: 'warn',
    });
    let total = 0;
    const count = async (sql: string) => (await pool.query<{ n: number }>(sql)).rows[0]!.n;
    const expired = () => count(`SELECT count(*)::int AS n FROM ${s}.support_reservations WHERE status = 'expired'`);
    const sent = () => count(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE state = 'sent'`);
    try {
      // Generous: a loaded machine (the rest of the suite runs alongside) can
      // take many seconds to boot a process; nothing below depends on it.
      await child.waitForLine(/expiry lane running/, 60_000);
      // Holds falling due throughout the run, besides each round's batch.
      await pool.query(
        `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash)
         SELECT 'trickle-' || i, 'c' || i || '@example.com', now() + i * interval '100 milliseconds', 'seed'
           FROM generate_series(1, 100) i`,
      );
      total += 100;

      const faults: Array<'restart' | 'terminate'> = [];
      for (let i = 0; i < 10; i++) faults.push('restart', 'terminate');
      for (const [round, fault] of faults.entries()) {
        // A batch due now: the lanes are busy with it when the fault lands.
        let before = 0;
        await waitFor(child, async () => ((before = await expired()), true), `round ${round}: reading progress`);
        await waitFor(
          child,
          async () => (
            await pool.query(
              `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash)
               SELECT 'r${round}-' || i, 'c' || i || '@example.com', now(), 'seed' FROM generate_series(1, 24) i
               ON CONFLICT (id) DO NOTHING`,
            ),
            true
          ),
          `round ${round}: seeding`,
        );
        total += 24;
        // Resumed: expiring again since the last fault.
        await waitFor(child, async () => (await expired()) > before, `round ${round}: expiry making progress`);
        if (fault === 'restart') {
          await server.stop(); // pg_ctl stop --mode=fast: every backend gets 57P01
          server = await startEmbeddedPostgres({ dataDir: dir, port });
        } else {
          const killed = await count(
            `SELECT count(*)::int AS n FROM (
               SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE application_name IN ('leasehold', 'leasehold-listener') AND pid <> pg_backend_pid()) t`,
          );
          expect(killed, `round ${round}: backends terminated`).toBeGreaterThan(0);
        }
      }

      await waitFor(child, async () => (await expired()) === total && (await sent()) === total, 'every hold expired and every intent sent', 60_000);
      // Every hold expired once, with exactly one intent, sent. A send whose
      // result was lost with its connection is sent again when its lease
      // expires (at-least-once): one acceptance on record, or more with the
      // intent flagged possible_duplicate.
      const { rows } = await pool.query<{ status: string; state: string | null; intents: number; accepted_ok: boolean; n: number }>(
        `SELECT status, state, intents, (accepted = 1 OR (accepted > 1 AND possible_duplicate)) AS accepted_ok, count(*)::int AS n
           FROM (SELECT r.status, o.state, o.possible_duplicate,
                        (SELECT count(*) FROM ${s}.email_outbox x WHERE x.reservation_id = r.id)::int AS intents,
                        (SELECT count(*) FROM ${s}.email_attempts a WHERE a.intent_id = o.id AND a.outcome = 'accepted')::int AS accepted
                   FROM ${s}.support_reservations r LEFT JOIN ${s}.email_outbox o ON o.reservation_id = r.id) per_hold
          GROUP BY 1, 2, 3, 4`,
      );
      expect(rows).toEqual([{ status: 'expired', state: 'sent', intents: 1, accepted_ok: true, n: total }]);
      expect(child.process.exitCode).toBeNull();

      child.process.kill('SIGTERM');
      expect((await child.exited).code).toBe(0);
    } finally {
      if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
      await child.exited;
      await pool.end();
    }
  }, 180_000);
});
