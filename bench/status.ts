import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { loadConfig } from '../src/config.js';
import { requireMigrated } from '../src/db/migrate.js';
import { ident, type Queryable } from '../src/db/pool.js';
import { createDatabaseMetrics } from '../src/read/db-metrics.js';
import { checkHealth } from '../src/read/health.js';
import { silentLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';
import { readStatus } from '../src/read/status.js';
import { buildApp } from '../src/server/app.js';
import type { Benchmark, BenchResult, Figure } from './common.js';
import { median, round, sleep } from './common.js';
import type { BenchDatabase } from './database.js';

/**
 * What the status surfaces cost once history has piled up:
 * BENCH_STATUS_ROWS (2,000,000) terminal rows in each of support_reservations,
 * email_outbox, email_attempts, email_events (one delivery event per intent,
 * 1 in 100 a hard bounce, 1 in 1,000 a complaint) and suppressions, finished
 * evenly over the last 30 days, plus a live set (held holds, some due;
 * pending intents). Each surface is called
 * BENCH_STATUS_REPEAT times after two warm-up calls:
 *
 * - GET /healthz, GET /metrics and GET /v1/status through the real Fastify
 *   app (app.inject, so routing and serialisation are included; /metrics
 *   calls are spaced 600 ms apart so its 500 ms snapshot cache never answers);
 * - `leasehold status`: the statements the command sends once connected
 *   (the migration check of openDatabase, then readStatus).
 *
 * Every statement the surfaces send is also timed on its own, through a
 * Queryable that records each one, so a slow surface names its statement.
 */
const ROWS = Number(process.env.BENCH_STATUS_ROWS ?? 2_000_000);
const REPEAT = Number(process.env.BENCH_STATUS_REPEAT ?? 20);
const TOKEN = 'bench-token-0123456789abcdef';

async function seedHistory(pool: pg.Pool, schema: string): Promise<void> {
  const s = ident(schema);
  // Terminal holds, each with a terminal intent and one finished attempt,
  // finished evenly over the last 30 days (so "the last hour" holds ~1/720).
  await pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, expired_at, request_hash)
     SELECT 'old' || g, 'customer' || g || '@example.com', 'expired', t - interval '1 second', t - interval '20 minutes', t, 'seeded'
       FROM generate_series(1, $1::int) AS g,
            LATERAL (SELECT now() - make_interval(secs => (g::float8 / $1) * 30 * 86400) AS t) AS at`,
    [ROWS],
  );
  await pool.query(
    `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, attempts, failed_attempts,
                                    available_at, created_at, sent_at, finished_at, receipt, last_error)
     SELECT 'reservation-expired:' || r.id, r.id, r.customer_email, 'reservation-expired', st.state, 1,
            (st.state = 'dead')::int, r.expired_at, r.expired_at,
            CASE WHEN st.state = 'sent' THEN r.expired_at + interval '50 milliseconds' END,
            r.expired_at + interval '50 milliseconds',
            CASE WHEN st.state = 'sent' THEN 'receipt-' || r.id END,
            CASE WHEN st.state <> 'sent' THEN 'seeded' END
       FROM ${s}.support_reservations r,
            LATERAL (SELECT CASE WHEN abs(hashtext(r.id)) % 100 IN (0, 1, 2) THEN 'rejected'
                                 WHEN abs(hashtext(r.id)) % 100 IN (3, 4) THEN 'dead'
                                 ELSE 'sent' END AS state) AS st`,
  );
  await pool.query(
    `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, receipt, error, duration_ms)
     SELECT o.id, 1, gen_random_uuid(), 'sandbox', o.available_at, o.finished_at,
            CASE o.state WHEN 'sent' THEN 'accepted' WHEN 'rejected' THEN 'rejected' ELSE 'failed' END,
            o.receipt, o.last_error, 50
       FROM ${s}.email_outbox o`,
  );
  await pool.query(
    `INSERT INTO ${s}.email_events (provider, provider_event_id, provider_message_id, intent_id, kind, bounce_type, occurred_at)
     SELECT 'sandbox', 'event-' || o.id, o.id, o.id, k.kind, CASE WHEN k.kind = 'bounced' THEN 'hard' END, o.finished_at + interval '1 second'
       FROM ${s}.email_outbox o,
            LATERAL (SELECT CASE WHEN abs(hashtext(o.id || 'e')) % 1000 < 10 THEN 'bounced'
                                 WHEN abs(hashtext(o.id || 'e')) % 1000 = 10 THEN 'complained'
                                 ELSE 'delivered' END AS kind) AS k`,
  );
  await pool.query(
    `INSERT INTO ${s}.suppressions (address_hash, address, reason, created_at)
     SELECT encode(sha256(convert_to(a, 'UTF8')), 'hex'), a, 'hard_bounce', now() - make_interval(secs => (g::float8 / $1) * 30 * 86400)
       FROM generate_series(1, $1::int) AS g, LATERAL (SELECT 'suppressed' || g || '@example.com' AS a) AS x`,
    [ROWS],
  );
  // The live set: 1,000 held holds (100 of them already due), 500 pending intents.
  await pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, request_hash)
     SELECT 'live' || g, 'c' || g || '@example.com', 'held', now() + make_interval(secs => g - 100), 'seeded'
       FROM generate_series(1, 1000) AS g`,
  );
  await pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, created_at, expired_at, request_hash)
     SELECT 'pend' || g, 'p' || g || '@example.com', 'expired', now() - interval '1 minute', now() - interval '21 minutes', now() - interval '1 minute', 'seeded'
       FROM generate_series(1, 500) AS g`,
  );
  await pool.query(
    `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at)
     SELECT 'reservation-expired:' || id, id, customer_email, 'reservation-expired', 'pending', expired_at, expired_at
       FROM ${s}.support_reservations WHERE id LIKE 'pend%'`,
  );
  for (const table of ['support_reservations', 'email_outbox', 'email_attempts', 'email_events', 'suppressions']) await pool.query(`VACUUM ANALYZE ${s}.${table}`);
}

/** A Queryable that times every statement it passes on, keyed by its text. */
function timingQueryable(pool: pg.Pool, times: Map<string, number[]>): Queryable {
  return {
    async query(text: string, values?: unknown[]) {
      const started = performance.now();
      const result = await pool.query(text, values);
      const key = text.replace(/\s+/g, ' ').trim();
      if (!times.has(key)) times.set(key, []);
      times.get(key)!.push(performance.now() - started);
      return result;
    },
  } as Queryable;
}

async function timeIt(call: () => Promise<unknown>, options: { spacingMs?: number } = {}): Promise<number[]> {
  for (let i = 0; i < 2; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    if (options.spacingMs) await sleep(options.spacingMs);
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  return times;
}

/** A short, recognisable name for a statement: its first words, schema removed. */
function label(text: string, schema: string): string {
  const plain = text.replaceAll(`"${schema}".`, '').replaceAll(`${schema}.`, '');
  return plain.length > 110 ? plain.slice(0, 107) + '...' : plain;
}

export const statusCost: Benchmark = {
  name: 'status',
  optIn: true,
  description: `/healthz, /metrics, /v1/status and \`leasehold status\` with ${ROWS.toLocaleString('en-US')} terminal rows per table`,
  async run(db: BenchDatabase): Promise<BenchResult> {
    const target = await db.freshSchema('status', 6);
    try {
      const seedStarted = Date.now();
      await seedHistory(target.pool, target.schema);
      const seedSeconds = (Date.now() - seedStarted) / 1000;
      await db.checkpoint();

      const config = loadConfig({});
      const app = buildApp({
        pool: target.pool,
        schema: target.schema,
        config,
        logger: silentLogger,
        metrics: createMetrics(),
        apiToken: TOKEN,
      });
      await app.ready();
      const get = async (url: string, auth = false) => {
        const res = await app.inject({ method: 'GET', url, headers: auth ? { authorization: `Bearer ${TOKEN}` } : {} });
        if (res.statusCode !== 200 && !(url === '/healthz' && res.statusCode === 503)) {
          throw new Error(`${url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
        }
        return res;
      };
      const surfaces: Array<{ name: string; times: number[] }> = [];
      try {
        surfaces.push({ name: 'GET /healthz', times: await timeIt(() => get('/healthz')) });
        surfaces.push({ name: 'GET /metrics', times: await timeIt(() => get('/metrics'), { spacingMs: 600 }) });
        surfaces.push({ name: 'GET /v1/status', times: await timeIt(() => get('/v1/status', true)) });
        surfaces.push({
          name: 'leasehold status (statements)',
          times: await timeIt(async () => {
            // What the command sends once connected: the read-only migration check, then the report.
            await requireMigrated(target.pool, target.schema);
            await readStatus(target.pool, target.schema, config);
          }),
        });
      } finally {
        await app.close();
      }

      // Every statement behind the four surfaces, timed on its own.
      const statementTimes = new Map<string, number[]>();
      const timed = timingQueryable(target.pool, statementTimes);
      // /metrics reads the lane, reputation and retention gauges in one statement.
      const registry = createDatabaseMetrics({ db: timed, schema: target.schema, promises: config, retention: config.retention, snapshotTtlMs: 0 });
      for (let i = 0; i < REPEAT + 2; i++) {
        await checkHealth({ db: timed, schema: target.schema, promises: config });
        await readStatus(timed, target.schema, config);
        await registry.metrics();
      }
      const statements = [...statementTimes.entries()]
        .map(([text, times]) => ({ statement: label(text, target.schema), calls: times.length, medianMs: round(median(times), 2), maxMs: round(Math.max(...times), 2) }))
        .sort((a, b) => b.medianMs - a.medianMs);

      const figures: Figure[] = surfaces.map((s) => ({ name: `${s.name}, median`, value: round(median(s.times), 2), unit: 'ms', target: '<= 10' }));
      for (const s of surfaces) figures.push({ name: `${s.name}, slowest of ${REPEAT}`, value: round(Math.max(...s.times), 2), unit: 'ms' });
      figures.push({ name: 'slowest statement, median', value: statements[0]?.medianMs ?? 0, unit: 'ms' });
      process.stdout.write('  statements (median / max ms over the calls of all four surfaces):\n');
      for (const st of statements) process.stdout.write(`    ${String(st.medianMs).padStart(8)} ${String(st.maxMs).padStart(8)}  ${st.statement}\n`);
      return {
        figures,
        details: {
          rows: ROWS,
          repeat: REPEAT,
          seedSeconds: round(seedSeconds, 1),
          surfaces: surfaces.map((s) => ({ name: s.name, medianMs: round(median(s.times), 2), maxMs: round(Math.max(...s.times), 2) })),
          statements,
        },
      };
    } finally {
      await target.drop();
    }
  },
};
