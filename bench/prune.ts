import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { ident, withTransaction } from '../src/db/pool.js';
import { ExpiryWorker } from '../src/holds/expiry-worker.js';
import { silentLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';
import { intentsLease } from '../src/tables/outbox.js';
import { eraseAddress } from '../src/retention/erase.js';
import { DEFAULT_RETENTION, type RetentionPolicy } from '../src/model/retention-policy.js';
import { Pruner } from '../src/retention/prune.js';
import { PruneWorker } from '../src/retention/prune-worker.js';
import { shippedTemplates } from '../src/templates/templates.js';
import type { Benchmark, BenchResult, Figure } from './common.js';
import { median, percentile, round, sleep } from './common.js';
import type { BenchDatabase, BenchSchema } from './database.js';
import { seedHolds } from './seed.js';

/**
 * Retention at scale. One schema is seeded with HOLDS finished stories (half
 * confirmed, a tenth cancelled, the rest expired with an intent: 90% sent,
 * 7% rejected, 3% dead; one attempt each, a second with an error quoting
 * the address for a quarter of them), ending evenly over the last 60 days
 * (oldest first on disk, as a real table fills). Then:
 *  1. table and index sizes per million holds;
 *  2. the hot paths with that history against an empty schema, measured in
 *     turn, twice: one expiry batch of 500 and one lease of 50, median ms
 *     (BENCH_PRUNE_ONLY=hot stops after this);
 *  3. prune throughput: every story past 30 days deleted (erasure off), then
 *     every story past 7 days erased, in batches of 1,000;
 *  4. erase --email for one address (scans: no address index);
 *  5. steady state: an ExpiryWorker expires RATE holds a second, first
 *     alone, then while a PruneWorker has what a deployment of RATE holds a
 *     second gives it: RATE stories a second passing the retention (to
 *     delete) and RATE a second passing the erasure age (to erase);
 *     reported: both backlogs, the prune worker's busy share, expiry
 *     lateness in both.
 */
const HOLDS = Number(process.env.BENCH_PRUNE_HOLDS ?? 2_000_000);
const BATCH = Number(process.env.BENCH_PRUNE_BATCH ?? DEFAULT_RETENTION.batchSize);
const RATE = Number(process.env.BENCH_PRUNE_RATE ?? 1000);
const SECONDS = Number(process.env.BENCH_PRUNE_SECONDS ?? 30);
const SEED_CHUNK = 1_000_000;
const HOT_HOLDS = 20_000;

const policy = (p: Partial<RetentionPolicy>): RetentionPolicy => ({ ...DEFAULT_RETENTION, batchSize: BATCH, ...p });

/**
 * The message every seeded intent stores: the shipped template rendered once
 * for a stand-in hold, whose id each row then substitutes (so rows differ
 * and compress as real ones would).
 */
const SAMPLE_HOLD = 'HOLDID';
const sample = shippedTemplates().render('reservation-expired', {
  intentId: `reservation-expired:${SAMPLE_HOLD}`,
  holdId: SAMPLE_HOLD,
  metadata: { slot: 'callback', channel: 'web' },
  expiresAt: new Date('2026-11-01T10:00:00Z'),
  expiredAt: new Date('2026-11-01T10:00:00Z'),
  from: 'Support <support@example.com>',
});

/**
 * Stories g in [from, to], ending at `end(g)` (SQL over g and $3 = HOLDS),
 * in one statement: holds, the expired ones' intents, their attempts, the
 * rendered message of every intent and a `delivered` event for every sent one.
 */
async function seedStories(pool: pg.Pool, schema: string, from: number, to: number, end: string, prefix: string): Promise<void> {
  const s = ident(schema);
  await pool.query(
    `WITH g AS (
       SELECT g, ${end} AS t FROM generate_series($1::int, $2::int) g
     ), h AS (
       INSERT INTO ${s}.support_reservations
         (id, customer_email, status, expires_at, created_at, confirmed_at, cancelled_at, expired_at, metadata, request_hash)
       SELECT $4 || g, 'customer' || g || '@example.com',
              CASE WHEN g % 10 < 5 THEN 'confirmed' WHEN g % 10 = 5 THEN 'cancelled' ELSE 'expired' END,
              t, t - interval '20 minutes',
              CASE WHEN g % 10 < 5 THEN t END, CASE WHEN g % 10 = 5 THEN t END, CASE WHEN g % 10 > 5 THEN t END,
              '{"slot":"callback","channel":"web"}', md5(g::text)
         FROM g
       RETURNING id, customer_email, expired_at, status
     ), i AS (
       INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, attempts, available_at, created_at,
                                      sent_at, finished_at, receipt, last_error)
       SELECT 'reservation-expired:' || h.id, h.id, h.customer_email, 'reservation-expired', st.state,
              CASE WHEN hashtext(h.id) % 4 = 0 THEN 2 ELSE 1 END, h.expired_at, h.expired_at,
              CASE WHEN st.state = 'sent' THEN h.expired_at + interval '1 second' END, h.expired_at + interval '1 second',
              CASE WHEN st.state = 'sent' THEN 'msg-' || h.id END,
              CASE WHEN st.state <> 'sent' THEN '550 <' || h.customer_email || '> rejected' END
         FROM h, LATERAL (SELECT CASE WHEN abs(hashtext(h.id)) % 100 < 90 THEN 'sent'
                                      WHEN abs(hashtext(h.id)) % 100 < 97 THEN 'rejected' ELSE 'dead' END AS state) st
        WHERE h.status = 'expired'
       RETURNING id, reservation_id, attempts, state, finished_at, recipient, receipt
     ), a AS (
       INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, provider_status,
                                        receipt, error, duration_ms)
       SELECT i.id, a, gen_random_uuid(), 'sandbox', i.finished_at - interval '1 second', i.finished_at - interval '900 ms',
              CASE WHEN a < i.attempts THEN 'failed' WHEN i.state = 'sent' THEN 'accepted' WHEN i.state = 'rejected' THEN 'rejected' ELSE 'failed' END,
              CASE WHEN a < i.attempts THEN 450 ELSE 200 END,
              CASE WHEN a = i.attempts AND i.state = 'sent' THEN i.receipt END,
              CASE WHEN a < i.attempts THEN '450 <' || i.recipient || '> mailbox busy' END, 40
         FROM i, generate_series(1, i.attempts) a
       RETURNING 1
     ), m AS (
       INSERT INTO ${s}.email_messages (intent_id, subject, text_body, html_body, from_address, reply_to, headers, template,
                                        template_locale, locale, time_zone, template_version, rendered_at)
       SELECT i.id, replace($5, $11, i.reservation_id), replace($6, $11, i.reservation_id), replace($7, $11, i.reservation_id),
              $8, NULL, replace($9, $11, i.reservation_id)::jsonb, 'reservation-expired', 'en', 'en', 'UTC', $10,
              i.finished_at - interval '1 second'
         FROM i
       RETURNING 1
     )
     INSERT INTO ${s}.email_events (provider, provider_event_id, provider_message_id, intent_id, kind, occurred_at, received_at)
     SELECT 'sandbox', 'evt-' || i.receipt, i.receipt, i.id, 'delivered', i.finished_at + interval '2 seconds', i.finished_at + interval '3 seconds'
       FROM i WHERE i.state = 'sent'`,
    [from, to, HOLDS, prefix, sample.subject, sample.text, sample.html, sample.from, JSON.stringify(sample.headers), sample.templateVersion, SAMPLE_HOLD],
  );
}

/** The tables a story spans, parents first. */
const STORY_TABLES = ['support_reservations', 'email_outbox', 'email_attempts', 'email_messages', 'email_events'];

interface Sizes {
  /** Table size (heap, TOAST, free space and visibility maps) and its indexes, in MB, and live rows. */
  tables: Record<string, { tableMB: number; indexesMB: number; rows: number }>;
  indexes: Record<string, number>;
}

async function sizes(pool: pg.Pool, schema: string): Promise<Sizes> {
  const { rows } = await pool.query<{ name: string; kind: string; bytes: string; indexes: string | null }>(
    `SELECT c.relname AS name, c.relkind AS kind,
            CASE WHEN c.relkind = 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END::text AS bytes,
            CASE WHEN c.relkind = 'r' THEN pg_indexes_size(c.oid)::text END AS indexes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'i')`,
    [schema],
  );
  const mb = (b: string) => Number(b) / 2 ** 20;
  const out: Sizes = { tables: {}, indexes: {} };
  for (const r of rows) {
    if (r.kind !== 'r') {
      out.indexes[r.name] = mb(r.bytes);
    } else if (STORY_TABLES.includes(r.name)) {
      const count = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(schema)}.${ident(r.name)}`);
      out.tables[r.name] = { tableMB: mb(r.bytes), indexesMB: mb(r.indexes!), rows: count.rows[0]!.n };
    }
  }
  return out;
}

/** Median ms of one expiry batch (500) and one lease (50) with whatever history the schema holds. */
async function hotPaths(target: BenchSchema, prefix: string): Promise<{ expireMs: number; leaseMs: number }> {
  const { pool, schema } = target;
  await seedHolds(pool, schema, HOT_HOLDS, { firstDueMs: -60_000, spacingMs: 1, prefix });
  const worker = new ExpiryWorker({ pool, schema, batchSize: 500, logger: silentLogger });
  const expire: number[] = [];
  for (;;) {
    const started = process.hrtime.bigint();
    const run = await worker.runOnce();
    expire.push(Number(process.hrtime.bigint() - started) / 1e6);
    if (!run.full) break;
  }
  // Fresh statistics for the 20,000 new intents, as autoanalyze would give them.
  await pool.query(`ANALYZE ${ident(schema)}.email_outbox`);
  const lease: number[] = [];
  for (let i = 0; i < 100; i++) {
    const started = process.hrtime.bigint();
    await intentsLease(pool, schema, { limit: 50, leaseMs: 60_000, token: randomUUID(), provider: 'sandbox', now: null });
    lease.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return { expireMs: round(median(expire), 2), leaseMs: round(median(lease), 2) };
}

async function drain(pruner: Pruner): Promise<{ seconds: number; rounds: number; pruned: Record<string, number>; erased: Record<string, number>; roundMs: number[] }> {
  const pruned: Record<string, number> = {};
  const erased: Record<string, number> = {};
  const roundMs: number[] = [];
  const started = process.hrtime.bigint();
  for (;;) {
    const t = process.hrtime.bigint();
    const round = await pruner.runOnce();
    roundMs.push(Number(process.hrtime.bigint() - t) / 1e6);
    for (const [k, v] of Object.entries(round.pruned)) pruned[k] = (pruned[k] ?? 0) + v;
    for (const [k, v] of Object.entries(round.erased)) erased[k] = (erased[k] ?? 0) + v;
    if (!round.full) break;
  }
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9, rounds: roundMs.length, pruned, erased, roundMs };
}

/**
 * Every second, RATE stories that have just passed the retention and RATE
 * that have just passed the erasure age (8 days), in 10 inserts of each.
 */
async function produce(pool: pg.Pool, schema: string, seconds: number): Promise<number> {
  const perTick = Math.max(1, Math.round(RATE / 10));
  const started = Date.now();
  let next = 1;
  for (let tick = 0; tick < seconds * 10; tick++) {
    await seedStories(pool, schema, next, next + perTick - 1, `now() - interval '31 days' - make_interval(secs => g::float8 / $3::int)`, 'old');
    await seedStories(pool, schema, next, next + perTick - 1, `now() - interval '8 days' - make_interval(secs => g::float8 / $3::int)`, 'week');
    next += perTick;
    const wait = started + (tick + 1) * 100 - Date.now();
    if (wait > 0) await sleep(wait);
  }
  return next - 1;
}

/** Expiry lateness (ms) of the holds with this prefix. */
async function lateness(pool: pg.Pool, schema: string, prefix: string): Promise<{ p50: number; p99: number; max: number }> {
  const { rows } = await pool.query<{ p50: number; p99: number; max: number }>(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99, max(ms) AS max
       FROM (SELECT extract(epoch FROM expired_at - expires_at)::float8 * 1000 AS ms
               FROM ${ident(schema)}.support_reservations WHERE id LIKE $1 || '%' AND status = 'expired') l`,
    [prefix],
  );
  return { p50: round(rows[0]!.p50), p99: round(rows[0]!.p99), max: round(rows[0]!.max) };
}

/** RATE holds a second fall due over SECONDS; resolves when all expired. */
async function expiryPhase(pool: pg.Pool, schema: string, prefix: string, during: () => Promise<void>): Promise<void> {
  await seedHolds(pool, schema, RATE * SECONDS, { firstDueMs: 2000, spacingMs: 1000 / RATE, prefix, analyze: false });
  const expiry = new ExpiryWorker({ pool, schema, logger: silentLogger });
  expiry.start();
  try {
    await during();
    const s = ident(schema);
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(250)) {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${s}.support_reservations WHERE id LIKE $1 || '%' AND status = 'held'`,
        [prefix],
      );
      if (rows[0]!.n === 0) return;
    }
    throw new Error(`prune bench: holds ${prefix}* not all expired`);
  } finally {
    await expiry.stop();
  }
}

async function steadyState(target: BenchSchema): Promise<Record<string, number>> {
  const { pool, schema } = target;
  const s = ident(schema);
  // A: the expiry lane alone.
  await expiryPhase(pool, schema, 'alone', () => sleep(2000 + SECONDS * 1000));
  const alone = await lateness(pool, schema, 'alone');

  // B: the same, while RATE stories a second pass the retention and RATE the erasure age, and a prune worker acts on them.
  const metrics = createMetrics();
  const prune = new PruneWorker({ pool, schema, policy: policy({ intervalMs: 1000 }), logger: silentLogger, metrics });
  // Stories the policy wants gone (or erased) now. Through the passes' partial indexes only: the planner has
  // no statistics for a partial index's expression, guesses a third of the table and would otherwise
  // count by a parallel scan of the whole table every second, loading the machine it measures.
  const backlog = async () =>
    withTransaction(pool, async (client) => {
      await client.query(`SET LOCAL enable_seqscan = off`);
      await client.query(`SET LOCAL max_parallel_workers_per_gather = 0`);
      return (
        await client.query<{ prune: number; erase: number }>(
        `SELECT (SELECT count(*) FROM ${s}.support_reservations r
                  WHERE r.status <> 'held' AND coalesce(r.confirmed_at, r.cancelled_at, r.expired_at) < now() - interval '30 days')::int AS prune,
                (SELECT count(*) FROM ${s}.support_reservations r
                  WHERE r.status <> 'held' AND r.customer_email IS NOT NULL
                    AND coalesce(r.confirmed_at, r.cancelled_at, r.expired_at) < now() - interval '7 days')::int AS erase`,
        )
      ).rows[0]!;
    });
  const samples: Array<{ prune: number; erase: number }> = [];
  let produced = 0;
  let producedSeconds = 0;
  const pruneStarted = Date.now();
  prune.start();
  await expiryPhase(pool, schema, 'pruned', async () => {
    let done = false;
    const sampler = (async () => {
      while (!done) {
        await sleep(1000);
        samples.push(await backlog());
      }
    })();
    const started = Date.now();
    produced = await produce(pool, schema, SECONDS);
    producedSeconds = (Date.now() - started) / 1000;
    // The last second's stories go too: the worker sleeps at most its interval.
    await sleep(2000);
    done = true;
    await sampler;
  });
  await prune.stop();
  const pruneSeconds = (Date.now() - pruneStarted) / 1000;
  const busy = (await metrics.retentionBatchSeconds.get()).values.find((v) => v.metricName === 'leasehold_retention_batch_seconds_sum')?.value ?? 0;
  const withPrune = await lateness(pool, schema, 'pruned');
  const atEnd = await backlog();
  return {
    produced,
    producedPerSecond: round(produced / producedSeconds),
    backlogMax: Math.max(0, ...samples.map((b) => b.prune)),
    backlogP50: percentile(samples.map((b) => b.prune), 50),
    eraseBacklogMax: Math.max(0, ...samples.map((b) => b.erase)),
    eraseBacklogP50: percentile(samples.map((b) => b.erase), 50),
    backlogAtEnd: atEnd.prune,
    eraseBacklogAtEnd: atEnd.erase,
    pruneBusyShare: round(busy / pruneSeconds, 3),
    aloneP50: alone.p50,
    aloneP99: alone.p99,
    aloneMax: alone.max,
    expiryP50: withPrune.p50,
    expiryP99: withPrune.p99,
    expiryMax: withPrune.max,
  };
}

export const prune: Benchmark = {
  name: 'prune',
  description: `retention with ${HOLDS.toLocaleString('en')} finished stories: sizes, hot paths, prune and erase throughput, ${RATE}/s steady state`,
  async run(db: BenchDatabase): Promise<BenchResult> {
    const figures: Figure[] = [];
    const details: Record<string, unknown> = { holds: HOLDS, batch: BATCH, rate: RATE, seconds: SECONDS };
    const perMillion = (mb: number) => round((mb * 1_000_000) / HOLDS, 1);

    // The baseline without history is measured in turn with the history, twice, after seeding: on a shared
    // machine the load changes over the minutes seeding takes, and a baseline taken before it compared
    // different loads, not different tables.
    const empty = await db.freshSchema('prune_empty');
    const target = await db.freshSchema('prune', 12);
    try {
      await empty.pool.query('VACUUM ANALYZE');
      const { pool, schema } = target;
      const seedStarted = Date.now();
      for (let from = 1; from <= HOLDS; from += SEED_CHUNK) {
        const to = Math.min(HOLDS, from + SEED_CHUNK - 1);
        // Ending evenly from 60 days ago to 1 day ago, oldest first.
        await seedStories(pool, schema, from, to, `now() - interval '60 days' + (g::float8 / $3::int) * interval '59 days'`, 'p');
        process.stdout.write(`  seeded ${to.toLocaleString('en')} stories (${Math.round((Date.now() - seedStarted) / 1000)} s)\n`);
      }
      for (const t of STORY_TABLES) await pool.query(`VACUUM ANALYZE ${ident(schema)}.${t}`);
      details.seedSeconds = (Date.now() - seedStarted) / 1000;
      await db.checkpoint();

      const seeded = await sizes(pool, schema);
      details.sizes = seeded;
      let total = 0;
      for (const table of STORY_TABLES) {
        const size = seeded.tables[table]!;
        total += size.tableMB + size.indexesMB;
        figures.push({
          name: `${table}: rows / table / indexes per 1M holds`,
          value: Math.round((size.rows * 1_000_000) / HOLDS),
          unit: `rows / ${perMillion(size.tableMB)} MB / ${perMillion(size.indexesMB)} MB`,
        });
      }
      figures.push({ name: 'all five tables with indexes, per 1M holds', value: perMillion(total), unit: 'MB' });
      for (const index of ['support_reservations_finished', 'support_reservations_unerased']) {
        figures.push({ name: `${index} (0009) per 1M holds`, value: perMillion(seeded.indexes[index] ?? 0), unit: 'MB' });
      }
      // What migration 0009 costs on an existing table: building one of its indexes (writes wait meanwhile).
      await pool.query(`DROP INDEX ${ident(schema)}.support_reservations_finished`);
      const built = process.hrtime.bigint();
      await pool.query(
        `CREATE INDEX support_reservations_finished ON ${ident(schema)}.support_reservations
           ((coalesce(confirmed_at, cancelled_at, expired_at))) WHERE status <> 'held'`,
      );
      const buildSeconds = Number(process.hrtime.bigint() - built) / 1e9;
      figures.push({ name: 'building one 0009 index, per 1M holds', value: round((buildSeconds * 1_000_000) / HOLDS, 2), unit: 's' });

      const rounds = [];
      for (const prefix of ['hot1-', 'hot2-']) rounds.push({ empty: await hotPaths(empty, prefix), loaded: await hotPaths(target, prefix) });
      details.hotPaths = rounds;
      for (const [i, r] of rounds.entries()) {
        figures.push({ name: `expiry batch of 500, empty / with history (median, pair ${i + 1})`, value: r.empty.expireMs, unit: `ms / ${r.loaded.expireMs} ms` });
        figures.push({ name: `lease of 50, empty / with history (median, pair ${i + 1})`, value: r.empty.leaseMs, unit: `ms / ${r.loaded.leaseMs} ms` });
      }
      // The hot-path holds and intents are young: they stay out of the way of what follows.
      if (process.env.BENCH_PRUNE_ONLY === 'hot') return { figures, details };

      await db.checkpoint();
      const pruned = await drain(new Pruner({ pool, schema, policy: policy({ erasePiiAfterDays: null }), logger: silentLogger }));
      const stories = pruned.pruned.support_reservations ?? 0;
      const rows = Object.values(pruned.pruned).reduce((a, b) => a + b, 0);
      figures.push({ name: 'prune: stories deleted past 30 days', value: stories, unit: `in ${round(pruned.seconds)} s` });
      figures.push({ name: 'prune throughput (stories)', value: Math.round(stories / pruned.seconds), unit: 'stories/s', target: `>= ${RATE}` });
      figures.push({ name: 'prune throughput (all rows)', value: Math.round(rows / pruned.seconds), unit: 'rows/s' });
      figures.push({ name: 'prune batch of 1,000: p50 / p99', value: round(percentile(pruned.roundMs, 50)), unit: `ms / ${round(percentile(pruned.roundMs, 99))} ms` });
      details.prune = { ...pruned, roundMs: undefined };

      await db.checkpoint();
      const erased = await drain(new Pruner({ pool, schema, policy: policy({}), logger: silentLogger }));
      const erasedStories = erased.erased.support_reservations ?? 0;
      figures.push({ name: 'erase: stories erased past 7 days', value: erasedStories, unit: `in ${round(erased.seconds)} s` });
      figures.push({ name: 'erase throughput (stories)', value: Math.round(erasedStories / erased.seconds), unit: 'stories/s' });
      figures.push({ name: 'erase batch of 1,000: p50 / p99', value: round(percentile(erased.roundMs, 50)), unit: `ms / ${round(percentile(erased.roundMs, 99))} ms` });
      details.erase = { ...erased, roundMs: undefined };
      details.sizesAfterPrune = await sizes(pool, schema);

      const started = process.hrtime.bigint();
      const report = await eraseAddress(pool, `customer${HOLDS - 7}@example.com`, { schema });
      figures.push({ name: 'erase --email (scans holds and outbox)', value: round(Number(process.hrtime.bigint() - started) / 1e6), unit: 'ms' });
      details.eraseByAddress = report;

      await pool.query(`VACUUM ANALYZE ${ident(schema)}.support_reservations`);
      await db.checkpoint();
      const steady = await steadyState(target);
      details.steady = steady;
      figures.push({ name: `steady state: stories/s to delete, and to erase, for ${SECONDS} s`, value: steady.producedPerSecond!, unit: 'stories/s each' });
      figures.push({ name: 'steady state: prune backlog max / at end', value: steady.backlogMax!, unit: `stories / ${steady.backlogAtEnd}`, target: `<= ${RATE * 5}` });
      figures.push({ name: 'steady state: erase backlog max / at end', value: steady.eraseBacklogMax!, unit: `stories / ${steady.eraseBacklogAtEnd}`, target: `<= ${RATE * 5}` });
      figures.push({ name: 'steady state: prune worker busy (share of wall time)', value: steady.pruneBusyShare!, unit: '' });
      figures.push({ name: 'expiry lateness alone: p50 / p99 / max', value: steady.aloneP50!, unit: `ms / ${steady.aloneP99} / ${steady.aloneMax} ms` });
      figures.push({ name: 'expiry lateness with prune: p50 / p99 / max', value: steady.expiryP50!, unit: `ms / ${steady.expiryP99} / ${steady.expiryMax} ms` });
    } finally {
      await empty.drop();
      await target.drop();
    }
    return { figures, details };
  },
};
