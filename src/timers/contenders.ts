import type pg from 'pg';
import { migrate } from '../db/migrate.js';
import { ident } from '../db/pool.js';
import { rateLimiterSet } from '../tables/rate-limiter.js';
import type { Workload } from './workload.js';

/**
 * The three designs compared, each in a schema of its own with leasehold's
 * `support_reservations` table, so holds and confirmations are identical
 * and only the expiry-and-email machinery differs. Their code is in
 * child-<name>.ts; what each is, and is not, is said here once.
 */
export const CONTENDERS = ['timers', 'scheduler', 'leasehold'] as const;
export type ContenderName = (typeof CONTENDERS)[number];

export const DESIGNS: Record<ContenderName, string> = {
  timers:
    'one setTimeout per hold in the process that created the holds; when it fires: UPDATE ... WHERE status = held, then send if that won. ' +
    'A restarted process arms no timers for holds created before the crash (nothing durable records them).',
  scheduler:
    'a durable jobs table (one job per hold, enqueued in the hold insert transaction), polled with FOR UPDATE SKIP LOCKED; ' +
    'the handler runs in the job transaction: expire the hold if held, send, delete the job, COMMIT (send, then commit; no outbox).',
  leasehold:
    "leasehold's two lanes: ExpiryWorker (expire + insert intent in one transaction) and DeliveryWorker (lease, send, record; " +
    'a retry after a lost answer is flagged possible_duplicate), in one process.',
};

/** Migrate the contender's schema and add what its design needs. */
export async function prepareContender(pool: pg.Pool, schema: string, name: ContenderName): Promise<void> {
  await migrate(pool, schema);
  const s = ident(schema);
  if (name === 'scheduler') {
    // Not a leasehold table: the comparison's stand-in for a job queue's.
    await pool.query(
      `CREATE TABLE ${s}.timer_jobs (
         id      bigserial   PRIMARY KEY,
         hold_id text        NOT NULL,
         run_at  timestamptz NOT NULL
       );
       CREATE INDEX timer_jobs_run_at ON ${s}.timer_jobs (run_at)`,
    );
  }
  if (name === 'leasehold') {
    // Pacing is not what is compared: a limit well above the workload's rate.
    await rateLimiterSet(pool, schema, { perSecond: 1000, burst: 100 });
  }
}

/** Insert the workload's holds (and, for the scheduler, their jobs in the same statement). */
export async function seedContender(pool: pg.Pool, schema: string, name: ContenderName, workload: Workload, t0: number): Promise<void> {
  const s = ident(schema);
  const ids = workload.holds.map((h) => h.id);
  const due = workload.holds.map((h) => (t0 + h.dueMs) / 1000);
  const jobs = name === 'scheduler' ? `, jobs AS (INSERT INTO ${s}.timer_jobs (hold_id, run_at) SELECT id, expires_at FROM holds)` : '';
  await pool.query(
    `WITH holds AS (
       INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash)
       SELECT id, id || '@example.com', to_timestamp(due), 'compare-timers'
         FROM unnest($1::text[], $2::float8[]) AS w(id, due)
       RETURNING id, expires_at)${jobs}
     SELECT count(*) FROM holds`,
    [ids, due],
  );
}

/**
 * True once the contender has no durable work left: nothing due still held
 * and nothing waiting to be sent. Timers keep no durable record, so there is
 * nothing to wait for (whatever they lost stays lost).
 */
export async function contenderSettled(pool: pg.Pool, schema: string, name: ContenderName): Promise<boolean> {
  const s = ident(schema);
  if (name === 'timers') return true;
  if (name === 'scheduler') {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.timer_jobs`);
    return rows[0]!.n === 0;
  }
  const { rows } = await pool.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM ${s}.support_reservations WHERE status = 'held' AND expires_at <= now())::int
          + (SELECT count(*) FROM ${s}.email_outbox WHERE state = 'pending')::int AS n`,
  );
  return rows[0]!.n === 0;
}
