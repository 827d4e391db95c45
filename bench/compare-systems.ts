/**
 * The three systems `npm run bench -- compare` puts side by side, each in a
 * schema of its own in the same database: how each is set up and seeded (in
 * the parent, outside any timing) and how each is started with its
 * defaults or its documented high-throughput settings (in compare-child).
 * Every setting the comparison uses is in this file.
 */
import { randomBytes } from 'node:crypto';
import { Logger, makeWorkerUtils, run, runMigrations, type RunnerOptions, type Task } from 'graphile-worker';
import type pg from 'pg';
import { PgBoss } from 'pg-boss';
import { loadConfig } from '../src/config.js';
import { intentsChannel, Listener } from '../src/db/listener.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, ident } from '../src/db/pool.js';
import { rateLimiterSet } from '../src/tables/rate-limiter.js';
import { deliveryWorkerFor, expiryWorkerFor } from '../src/service.js';
import { silentLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';
import type { EmailGateway } from '../src/providers/gateway.js';
import { seedPendingIntents } from './seed.js';
import { loadTemplates } from '../src/templates/templates.js';

export const SYSTEMS = ['leasehold', 'graphile-worker', 'graphile-worker-work', 'pg-boss'] as const;
export type System = (typeof SYSTEMS)[number];
export const PROFILES = ['defaults', 'tuned'] as const;
export type Profile = (typeof PROFILES)[number];

export const isSystem = (s: string): s is System => (SYSTEMS as readonly string[]).includes(s);
export const isProfile = (p: string): p is Profile => (PROFILES as readonly string[]).includes(p);

const QUEUE = 'noop';

/**
 * `graphile-worker-work`: graphile-worker, its handler doing the work a
 * leasehold send does around the provider call, as an application built
 * on graphile-worker would: it renders the shipped reservation-expired
 * template with leasehold's own LiquidJS set (the hold's facts come in the
 * payload) and stores the rendered message and one attempt row, in one
 * statement, before the job completes. `graphile-worker` (its no-op
 * handler) is the plain comparison; this one shows both on the same work
 * per email. Both run in every compare, so one run shows every ratio.
 */
const isGraphile = (system: System): boolean => system === 'graphile-worker' || system === 'graphile-worker-work';

/**
 * The documented high-throughput settings ("tuned"), shown in the report.
 * - leasehold: batch 500, concurrency 1000: two rounds of 500 side by side (README, configuration).
 * - graphile-worker 0.18: the configuration of https://worker.graphile.org/docs/performance
 *   (concurrentJobs 24, maxPoolSize 25, localQueue.size 500, completeJobBatchDelay 0,
 *   failJobBatchDelay 0); BENCH_COMPARE_GRAPHILE_LOCAL_QUEUE overrides the local queue size.
 * - pg-boss 12.38: work() with batchSize 50 and burstWhenBatchFull (docs/api/workers.md:
 *   without it a worker fetches once per pollingIntervalSeconds, 2 s, whatever it found).
 */
export const TUNED = {
  leasehold: { batchSize: 500, concurrency: 1000 },
  'graphile-worker': {
    concurrentJobs: 24,
    maxPoolSize: 25,
    localQueue: { size: Number(process.env.BENCH_COMPARE_GRAPHILE_LOCAL_QUEUE ?? 500) },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
  },
  'pg-boss': { batchSize: 50, burstWhenBatchFull: true },
} as const;

/** What "defaults" means for each, for the report. */
export function defaultsDescription(): Record<System, string> {
  const config = loadConfig({});
  return {
    leasehold: `batch ${config.deliveryBatch}, concurrency ${config.deliveryConcurrency}; expiry batch ${config.expiryBatch}, interval ${config.expiryIntervalMs} ms; LISTEN wake-up as \`leasehold start\` wires it`,
    'graphile-worker': 'concurrentJobs 1, maxPoolSize 10, pollInterval 2000 ms, no local queue, no batched completion',
    'graphile-worker-work': 'as graphile-worker; the handler renders and stores the message and an attempt',
    'pg-boss': 'work() batchSize 1, pollingIntervalSeconds 2, localConcurrency 1, queue without notify',
  };
}

const silentGraphileLogger = new Logger(() => () => {});

// ---------------------------------------------------------------- setup and seeding (parent)

/** When items fall due: item i at base + i * spacingMs (epoch milliseconds). */
export interface DueSchedule {
  base: number;
  spacingMs: number;
}

export interface SystemSetup {
  schema: string;
  /** A small pool on the same database (for reading results). */
  pool: pg.Pool;
  /** Add n items, available now (drain) or falling due on a schedule. */
  seed(n: number, due?: DueSchedule): Promise<void>;
  /** VACUUM ANALYZE the tables the items went into. */
  settle(): Promise<void>;
  drop(): Promise<void>;
}

/** A fresh schema for `system`, its own tables created, nothing seeded. */
export async function setUpSystem(url: string, system: System): Promise<SystemSetup> {
  const schema = `bench_cmp_${system.replace(/-/g, '_')}_${randomBytes(3).toString('hex')}`;
  const pool = createPool({ connectionString: url, max: 4, applicationName: 'leasehold-bench-compare' });
  const s = ident(schema);
  const drop = async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`).catch(() => {});
    await pool.end();
  };
  try {
    if (system === 'leasehold') return await setUpLeasehold(pool, schema, drop);
    if (isGraphile(system)) return await setUpGraphile(url, pool, schema, drop, system === 'graphile-worker-work');
    return await setUpPgBoss(url, pool, schema, drop);
  } catch (error) {
    await drop();
    throw error;
  }
}

async function setUpLeasehold(pool: pg.Pool, schema: string, drop: () => Promise<void>): Promise<SystemSetup> {
  const s = ident(schema);
  await migrate(pool, schema);
  // Opened wide: the comparison measures the lane, not the configured provider limit.
  await rateLimiterSet(pool, schema, { perSecond: 1_000_000, burst: 1_000_000 });
  return {
    schema,
    pool,
    async seed(n, due) {
      if (!due) return seedPendingIntents(pool, schema, n);
      await pool.query(
        `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, request_hash)
         SELECT 'h' || g, 'customer' || g || '@example.com', 'held',
                to_timestamp(($2::float8 + (g - 1) * $3::float8) / 1000), now(), 'seeded'
           FROM generate_series(1, $1::int) AS g`,
        [n, due.base, due.spacingMs],
      );
    },
    async settle() {
      for (const table of ['support_reservations', 'email_outbox', 'email_attempts']) await pool.query(`VACUUM ANALYZE ${s}.${table}`);
    },
    drop,
  };
}

async function setUpGraphile(url: string, pool: pg.Pool, schema: string, drop: () => Promise<void>, work: boolean): Promise<SystemSetup> {
  const options: RunnerOptions = { preset: { worker: { connectionString: url, schema, logger: silentGraphileLogger } } };
  await runMigrations(options);
  if (work) {
    const s = ident(schema);
    await pool.query(`CREATE TABLE ${s}.bench_messages (job_id bigint PRIMARY KEY, subject text NOT NULL, text_body text NOT NULL,
                                                      html_body text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
    await pool.query(`CREATE TABLE ${s}.bench_attempts (id bigserial PRIMARY KEY, job_id bigint NOT NULL, started_at timestamptz NOT NULL,
                                                      finished_at timestamptz NOT NULL, outcome text NOT NULL, receipt text)`);
    await pool.query(`CREATE INDEX ON ${s}.bench_attempts (job_id)`);
  }
  return {
    schema,
    pool,
    async seed(n, due) {
      const utils = await makeWorkerUtils(options);
      try {
        for (let from = 0; from < n; from += 5000) {
          const specs = Array.from({ length: Math.min(5000, n - from) }, (_, k) => {
            const i = from + k;
            return due ? { identifier: QUEUE, payload: { i }, runAt: new Date(due.base + i * due.spacingMs) } : { identifier: QUEUE, payload: { i } };
          });
          await utils.addJobs(specs);
        }
      } finally {
        await utils.release();
      }
    },
    async settle() {
      await pool.query(`VACUUM ANALYZE ${ident(schema)}._private_jobs`);
    },
    drop,
  };
}

async function setUpPgBoss(url: string, pool: pg.Pool, schema: string, drop: () => Promise<void>): Promise<SystemSetup> {
  const boss = new PgBoss({ connectionString: url, schema, supervise: false, schedule: false, max: 2 });
  boss.on('error', () => {});
  await boss.start();
  await boss.createQueue(QUEUE);
  return {
    schema,
    pool,
    async seed(n, due) {
      for (let from = 0; from < n; from += 5000) {
        const jobs = Array.from({ length: Math.min(5000, n - from) }, (_, k) => {
          const i = from + k;
          return due ? { data: { i }, startAfter: new Date(due.base + i * due.spacingMs) } : { data: { i } };
        });
        await boss.insert(QUEUE, jobs);
      }
    },
    async settle() {
      await pool.query(`VACUUM ANALYZE ${ident(schema)}.job`);
    },
    async drop() {
      await boss.stop({ graceful: false, timeout: 1000 }).catch(() => {});
      await drop();
    },
  };
}

// ---------------------------------------------------------------- running (child)

export interface Handle {
  /** A statement answering one boolean column `done`: every item's completion is committed. */
  done: { text: string; values: unknown[] };
  /** leasehold only: emails handed off in their expiry statement so far (leasehold_emails_handed_off_total). */
  handedOff?: () => Promise<number>;
  stop(): Promise<void>;
}

export interface StartOptions {
  system: System;
  profile: Profile;
  url: string;
  schema: string;
  /** Call with the item's index when its handler runs. */
  record: (index: number) => void;
  /** leasehold only: also run the expiry lane (items are holds falling due). */
  withExpiry: boolean;
  /** leasehold only: call with the item's index once its hold's expiry transaction has committed. */
  committed?: (index: number) => void;
}

export async function startSystem(o: StartOptions): Promise<Handle> {
  if (o.system === 'leasehold') return startLeasehold(o);
  if (isGraphile(o.system)) return startGraphile(o);
  return startPgBoss(o);
}

/** Item i is hold `h<i+1>` (as setUpLeasehold and bench/seed.ts seed them). */
const holdIndex = (holdId: string): number => Number(holdId.slice(1)) - 1;

/** Both lanes wired as `leasehold start` wires them, with a gateway that accepts at once. */
async function startLeasehold(o: StartOptions): Promise<Handle> {
  const config = loadConfig({});
  const tuned = o.profile === 'tuned';
  const pool = createPool({ connectionString: o.url, max: 12, applicationName: 'leasehold-bench-compare' });
  const gateway: EmailGateway = {
    name: 'noop',
    idempotent: false,
    async send(message) {
      o.record(holdIndex(message.holdId));
      return { kind: 'accepted', receipt: `noop-${message.intentId}` };
    },
  };
  // Built as `leasehold start` builds them (src/service.ts), its metrics included, tuned settings on top.
  const metrics = createMetrics();
  const base = { pool, schema: o.schema, logger: silentLogger, metrics };
  const delivery = deliveryWorkerFor(config, base, gateway, tuned ? TUNED.leasehold : {});
  // Wired as `leasehold start` wires them: the expiry lane wakes the delivery lane in-process, and its NOTIFY, naming this process, is left to others.
  const ownNotify = `process:${randomBytes(8).toString('hex')}`;
  const listener = new Listener(o.url, intentsChannel(o.schema), () => delivery.wake(), silentLogger, { ownPayload: ownNotify });
  const expiry = o.withExpiry ? expiryWorkerFor(config, base, { onIntentsCommitted: () => delivery.wake(), notifyPayload: ownNotify, ...(config.handOff ? { handOff: delivery } : {}) }) : undefined;
  const committed = o.committed;
  if (committed && expiry) expiry.on('expired', (e) => committed(holdIndex(e.holdId)));
  listener.start();
  delivery.start();
  expiry?.start();
  return {
    done: { text: `SELECT NOT EXISTS (SELECT 1 FROM ${ident(o.schema)}.email_outbox WHERE state = 'pending') AS done`, values: [] },
    handedOff: async () => (await metrics.emailsHandedOff.get()).values[0]?.value ?? 0,
    async stop() {
      await expiry?.stop();
      await listener.stop();
      await delivery.stop();
      await pool.end();
    },
  };
}

async function startGraphile(o: StartOptions): Promise<Handle> {
  // The same documented settings for both handlers.
  const tuned = o.profile === 'tuned' ? TUNED['graphile-worker'] : {};
  const runner = await run({
    preset: { worker: { connectionString: o.url, schema: o.schema, logger: silentGraphileLogger, ...tuned } },
    noHandleSignals: true,
    taskList: {
      [QUEUE]: o.system === 'graphile-worker-work'
        ? graphileWorkHandler(o)
        : async (payload) => {
            o.record((payload as { i: number }).i);
          },
    },
  });
  return {
    // Graphile Worker deletes a job when it completes.
    done: { text: `SELECT NOT EXISTS (SELECT 1 FROM ${ident(o.schema)}._private_jobs) AS done`, values: [] },
    stop: () => runner.stop(),
  };
}

/** graphile-worker-work's handler: render, "send" (record), store message and attempt in one statement. */
function graphileWorkHandler(o: StartOptions): Task {
  const config = loadConfig({});
  const templates = loadTemplates();
  const s = ident(o.schema);
  // As seeded for leasehold (bench/seed.ts): expired an hour ago, no metadata.
  const expiredAt = new Date(Date.now() - 3_600_000);
  return async (payload, helpers) => {
    const { i } = payload as { i: number };
    const started = new Date();
    const message = templates.render('reservation-expired', {
      intentId: `job-${helpers.job.id}`,
      holdId: `h${i + 1}`,
      metadata: {},
      expiresAt: expiredAt,
      expiredAt,
      from: config.emailFrom,
    });
    o.record(i);
    await helpers.query(
      `WITH m AS (INSERT INTO ${s}.bench_messages (job_id, subject, text_body, html_body) VALUES ($1, $2, $3, $4))
       INSERT INTO ${s}.bench_attempts (job_id, started_at, finished_at, outcome, receipt) VALUES ($1, $5, now(), 'accepted', $6)`,
      [helpers.job.id, message.subject, message.text, message.html, started, `noop-${helpers.job.id}`],
    );
  };
}

async function startPgBoss(o: StartOptions): Promise<Handle> {
  const boss = new PgBoss({ connectionString: o.url, schema: o.schema });
  boss.on('error', (error) => process.stderr.write(`pg-boss: ${String(error)}\n`));
  await boss.start();
  const options = o.profile === 'tuned' ? { ...TUNED['pg-boss'] } : {};
  await boss.work<{ i: number }>(QUEUE, options, async (jobs) => {
    for (const job of jobs) o.record(job.data.i);
  });
  return {
    done: {
      text: `SELECT NOT EXISTS (SELECT 1 FROM ${ident(o.schema)}.job WHERE name = $1 AND state IN ('created', 'retry', 'active')) AS done`,
      values: [QUEUE],
    },
    stop: () => boss.stop({ graceful: true, timeout: 5000 }),
  };
}
