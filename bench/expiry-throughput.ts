import { ident } from '../src/db/pool.js';
import { ExpiryWorker } from '../src/holds/expiry-worker.js';
import { silentLogger } from '../src/observability/logger.js';
import type { Benchmark, BenchResult } from './common.js';
import { median, round } from './common.js';
import type { BenchDatabase, BenchSchema } from './database.js';
import { seedHistory, seedHolds } from './seed.js';

/**
 * Holds expired per second (each with its intent) by ExpiryWorker, looping
 * runOnce() at the default batch size until drained, against the same work
 * done by one raw set-based statement with no LIMIT. Same number of backdated
 * holds for both, each in a fresh schema, rounds interleaved so machine noise
 * hits both sides alike; the median of each side is reported.
 */
const HOLDS = Number(process.env.BENCH_EXPIRY_HOLDS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** Terminal holds already in the table (a deployment's history); 0 by default. */
const HISTORY = Number(process.env.BENCH_EXPIRY_HISTORY ?? 0);
/**
 * BENCH_EXPIRY_STALE_STATS=1: statistics taken before the due holds arrived
 * (a backlog that built up since the last autoanalyze), the case where the
 * planner's choices for the expiry statement matter most.
 */
const STALE_STATS = process.env.BENCH_EXPIRY_STALE_STATS === '1';
const BATCH = process.env.BENCH_EXPIRY_BATCH ? Number(process.env.BENCH_EXPIRY_BATCH) : undefined;

async function prepare(db: BenchDatabase, label: string): Promise<BenchSchema> {
  const target = await db.freshSchema(label);
  await seedHistory(target.pool, target.schema, HISTORY);
  await seedHolds(target.pool, target.schema, HOLDS, { firstDueMs: -3_600_000, spacingMs: 1, analyze: !STALE_STATS });
  // Start each timed run with no dirty buffers left by seeding.
  await target.pool.query('CHECKPOINT').catch(() => {});
  return target;
}

async function expiredCount(target: BenchSchema): Promise<{ expired: number; intents: number }> {
  const s = ident(target.schema);
  const { rows } = await target.pool.query<{ expired: number; intents: number }>(
    `SELECT (SELECT count(*) FROM ${s}.support_reservations WHERE status = 'expired')::int AS expired,
            (SELECT count(*) FROM ${s}.email_outbox)::int AS intents`,
  );
  return rows[0]!;
}

async function workerRound(db: BenchDatabase): Promise<{ perSecond: number; batches: number }> {
  const target = await prepare(db, 'expiry_worker');
  try {
    const worker = new ExpiryWorker({ pool: target.pool, schema: target.schema, batchSize: BATCH, logger: silentLogger });
    let batches = 0;
    let total = 0;
    const started = process.hrtime.bigint();
    for (;;) {
      const run = await worker.runOnce();
      batches += 1;
      total += run.expired.length;
      if (!run.full) break;
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const check = await expiredCount(target);
    if (total !== HOLDS || check.expired !== HOLDS || check.intents !== HOLDS) {
      throw new Error(`worker expired ${total} (db: ${check.expired} holds, ${check.intents} intents), expected ${HOLDS}`);
    }
    return { perSecond: HOLDS / seconds, batches };
  } finally {
    await target.drop();
  }
}

async function rawRound(db: BenchDatabase): Promise<{ perSecond: number }> {
  const target = await prepare(db, 'expiry_raw');
  const s = ident(target.schema);
  try {
    const started = process.hrtime.bigint();
    const { rows } = await target.pool.query<{ n: number }>(
      `WITH expired AS (
         UPDATE ${s}.support_reservations r
            SET status = 'expired', expired_at = now()
          WHERE r.status = 'held' AND r.expires_at <= now()
          RETURNING r.id, r.customer_email, r.expired_at
       ), intents AS (
         INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at)
         SELECT 'reservation-expired:' || e.id, e.id, e.customer_email, 'reservation-expired', 'pending', e.expired_at, e.expired_at
           FROM expired e
         ON CONFLICT (id) DO NOTHING
         RETURNING id
       )
       SELECT count(*)::int AS n FROM intents`,
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (rows[0]?.n !== HOLDS) throw new Error(`raw statement expired ${rows[0]?.n}, expected ${HOLDS}`);
    return { perSecond: HOLDS / seconds };
  } finally {
    await target.drop();
  }
}

export const expiryThroughput: Benchmark = {
  name: 'expiry-throughput',
  description: `ExpiryWorker vs one raw statement, ${HOLDS} backdated holds${HISTORY ? ` (+${HISTORY} terminal)` : ''}${STALE_STATS ? ', stale statistics' : ''}`,
  async run(db): Promise<BenchResult> {
    const worker: number[] = [];
    const raw: number[] = [];
    const ratios: number[] = [];
    let batches = 0;
    for (let i = 0; i < ROUNDS; i++) {
      // Alternate which side goes first so drift favours neither.
      let wr: { perSecond: number; batches: number };
      let r: { perSecond: number };
      if (i % 2 === 0) {
        wr = await workerRound(db);
        r = await rawRound(db);
      } else {
        r = await rawRound(db);
        wr = await workerRound(db);
      }
      worker.push(wr.perSecond);
      raw.push(r.perSecond);
      ratios.push(wr.perSecond / r.perSecond);
      batches = wr.batches;
    }
    return {
      figures: [
        { name: 'worker holds/s', value: Math.round(median(worker)), unit: 'holds/s' },
        { name: 'raw statement holds/s', value: Math.round(median(raw)), unit: 'holds/s' },
        { name: 'ratio worker/raw', value: round(median(ratios), 3), unit: 'x', target: '>= 0.7' },
      ],
      details: {
        holds: HOLDS,
        history: HISTORY,
        staleStatistics: STALE_STATS,
        batchSize: BATCH ?? 500,
        batches,
        rounds: ROUNDS,
        workerPerSecond: worker.map(Math.round),
        rawPerSecond: raw.map(Math.round),
        ratios: ratios.map((r) => round(r, 3)),
      },
    };
  },
};
