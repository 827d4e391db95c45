/**
 * `npm run bench -- held-for-later` (opt-in): what the statements that take
 * due work in due order cost beside rows that wait for later, against the
 * same statements with nothing waiting. Waiting: holds expiring in an hour,
 * intents waiting on a retry's back-off (one tenant, then three for the
 * fair lease; deadlines hours away), webhook events waiting on theirs; due: 10 holds, 10 intents (2 of
 * them past their deadline) and 1 webhook event. Each sample runs one
 * statement in a transaction that is rolled back, so every sample sees the
 * same rows; the figure is its wall time from this process, median of the
 * samples. A statement whose index scan is bounded by its clock costs the
 * same with 100,000 rows waiting as with none (test/tables/held-for-later
 * holds each to the rows it reads).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { ident, type Queryable } from '../src/db/pool.js';
import { holdsExpireDueWithOutlook } from '../src/tables/holds.js';
import { intentsLease, intentsLeaseOneTenant, intentsSweepDeadlines } from '../src/tables/outbox.js';
import { rateLimiterSet } from '../src/tables/rate-limiter.js';
import { webhookEventsLease } from '../src/tables/webhook-events.js';
import type { Benchmark, BenchResult, Figure } from './common.js';
import { median, round } from './common.js';

const WAITING = Number(process.env.BENCH_HELD_FOR_LATER_WAITING ?? 100_000);
const SAMPLES = Number(process.env.BENCH_HELD_FOR_LATER_SAMPLES ?? 60);
const DUE = 10;

type Statement = {
  name: string;
  run: (db: Queryable, schema: string) => Promise<unknown>;
  /** In each sample's transaction, before the statement. */
  before?: (db: Queryable, s: string) => Promise<unknown>;
  /** Once, committed, before this statement's samples. */
  once?: (db: Queryable, s: string) => Promise<unknown>;
};

const lease = () => ({ limit: 50, leaseMs: 30_000, token: randomUUID(), provider: 'bench', now: null });
const STATEMENTS: Statement[] = [
  {
    name: `expiry batch of ${DUE}, handing off`,
    // The due holds are added in the sample's own transaction: the batch expires them.
    before: (db, s) =>
      db.query(`INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, created_at, request_hash)
                SELECT 'due-' || g, 'c' || g || '@example.com', now() - make_interval(secs => g), now(), 'bench' FROM generate_series(1, ${DUE}) g`),
    run: (db, schema) =>
      holdsExpireDueWithOutlook(db, schema, 100, null, null, null, { token: randomUUID(), leaseMs: 30_000, provider: 'bench', account: 'default', limit: 100, emailsPerPermit: 1 }),
  },
  { name: 'lease, one tenant', run: (db, schema) => intentsLeaseOneTenant(db, schema, lease()) },
  {
    name: 'lease, fair, three tenants',
    // The intents spread over three tenants from here on (the one-tenant form before saw one).
    once: async (db, s) => {
      await db.query(`UPDATE ${s}.email_outbox SET tenant = 't' || (abs(hashtext(id)) % 3)`);
      await db.query(`VACUUM ANALYZE ${s}.email_outbox`);
    },
    run: (db, schema) => intentsLease(db, schema, lease()),
  },
  { name: 'deadline sweep', run: (db, schema) => intentsSweepDeadlines(db, schema, null, 100) },
  { name: 'webhook lease', run: (db, schema) => webhookEventsLease(db, schema, { endpoint: 'app', limit: 10, leaseMs: 30_000 }) },
];

async function seed(pool: pg.Pool, s: string, waiting: number): Promise<void> {
  await pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, created_at, request_hash)
     SELECT 'later-' || g, 'c' || g || '@example.com', now() + interval '1 hour' + make_interval(secs => g), now(), 'bench' FROM generate_series(1, $1::int) g`,
    [waiting],
  );
  await pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, expired_at, request_hash)
     SELECT 'sent-' || g, 'c' || g || '@example.com', 'expired', now() - interval '1 hour', now() - interval '2 hours', now() - interval '1 hour', 'bench'
       FROM generate_series(1, $1::int) g`,
    [waiting + DUE],
  );
  await pool.query(
    `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, send_by, created_at)
     SELECT 'reservation-expired:sent-' || g, 'sent-' || g, 'c' || g || '@example.com', 'reservation-expired', 'pending',
            CASE WHEN g <= $2::int THEN now() - interval '1 minute' ELSE now() + interval '1 hour' + make_interval(secs => g) END,
            CASE WHEN g <= 2 THEN now() - interval '1 second' ELSE now() + interval '3 hours' END, now() - interval '1 hour'
       FROM generate_series(1, $1::int) g`,
    [waiting + DUE, DUE],
  );
  await pool.query(
    `INSERT INTO ${s}.webhook_events (id, endpoint, type, hold_id, payload, occurred_at, created_at, state, available_at)
     SELECT 'msg_' || g, 'app', 'hold.expired', 'h' || g, '{}', now(), now(), 'pending',
            CASE WHEN g = 1 THEN now() - interval '1 second' ELSE now() + interval '1 hour' + make_interval(secs => g) END
       FROM generate_series(1, $1::int) g`,
    [waiting + 1],
  );
  for (const table of ['support_reservations', 'email_outbox', 'webhook_events']) await pool.query(`VACUUM ANALYZE ${s}.${table}`);
}

export const heldForLater: Benchmark = {
  name: 'held-for-later',
  description: `the due-order statements beside ${WAITING.toLocaleString('en')} rows waiting for later, against none`,
  optIn: true,
  async run(db): Promise<BenchResult> {
    const figures: Figure[] = [];
    const medians: Record<string, Record<string, number>> = {};
    for (const waiting of [0, WAITING]) {
      const target = await db.freshSchema(`held_for_later_${waiting}`, 2);
      try {
        const s = ident(target.schema);
        await rateLimiterSet(target.pool, target.schema, { perSecond: 1e6, burst: 1e6 });
        await seed(target.pool, s, waiting);
        const client = await target.pool.connect();
        try {
          for (const statement of STATEMENTS) {
            await statement.once?.(client, s);
            const ms: number[] = [];
            for (let i = 0; i < SAMPLES + 5; i++) {
              await client.query('BEGIN');
              await statement.before?.(client, s);
              const started = process.hrtime.bigint();
              await statement.run(client, target.schema);
              const took = Number(process.hrtime.bigint() - started) / 1e6;
              await client.query('ROLLBACK');
              if (i >= 5) ms.push(took);
            }
            (medians[statement.name] ??= {})[String(waiting)] = median(ms);
          }
        } finally {
          client.release();
        }
      } finally {
        await target.drop();
      }
    }
    for (const [name, at] of Object.entries(medians)) {
      const none = at['0']!;
      const many = at[String(WAITING)]!;
      figures.push({ name: `${name}, nothing waiting, median`, value: round(none, 2), unit: 'ms' });
      figures.push({ name: `${name}, ${WAITING.toLocaleString('en')} waiting, median`, value: round(many, 2), unit: 'ms' });
      figures.push({ name: `${name}: ${WAITING.toLocaleString('en')} waiting / none`, value: round(many / none, 2), unit: 'x', target: '<= 2' });
    }
    return { figures, details: { waiting: WAITING, samples: SAMPLES, medians } };
  },
};
