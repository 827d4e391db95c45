import type pg from 'pg';
import { ident } from '../src/db/pool.js';
import { ExpiryWorker } from '../src/holds/expiry-worker.js';
import { createHold } from '../src/holds/holds.js';
import { silentLogger } from '../src/observability/logger.js';
import type { Benchmark, BenchResult, Figure } from './common.js';
import { percentile, round, sleep } from './common.js';
import type { BenchDatabase } from './database.js';
import { seedHolds } from './seed.js';

/**
 * Lateness of a running ExpiryWorker (start(), default 1 s interval, default
 * batch) when 1,000 holds fall due per second: `expired_at - expires_at` from
 * the database (expired_at is the expiry transaction's captured now). Two
 * workloads:
 *  - seeded: all holds inserted in advance, expires_at spread evenly;
 *  - live: holds created while the worker runs, via createHold with ttl 1 s.
 * Also reported: lateness as seen after COMMIT (client clock when runOnce
 * returned, minus expires_at), i.e. when the expiration became visible.
 */
const RATE = Number(process.env.BENCH_LATENESS_RATE ?? 1000);
const SECONDS = Number(process.env.BENCH_LATENESS_SECONDS ?? 20);
const LIVE_SECONDS = Number(process.env.BENCH_LATENESS_LIVE_SECONDS ?? 10);
const LEAD_MS = 3000;

interface Lateness {
  holds: number;
  p50: number;
  p99: number;
  max: number;
  committedP50: number;
  committedP99: number;
  committedMax: number;
  slowestRunMs: number;
  longestGapMs: number;
}

/** Run the worker, recording when each expiration became visible to the client. */
interface Instrumented {
  worker: ExpiryWorker;
  committedLateness: number[];
  /** Longest single runOnce (transaction), and longest wait after a run that expired holds, ms. */
  slowestRunMs: number;
  longestGapMs: number;
}

function instrumentedWorker(pool: pg.Pool, schema: string): Instrumented {
  const worker = new ExpiryWorker({ pool, schema, logger: silentLogger });
  const result: Instrumented = { worker, committedLateness: [], slowestRunMs: 0, longestGapMs: 0 };
  const runOnce = worker.runOnce.bind(worker);
  let lastEnd: number | undefined;
  // tick() calls this.runOnce(), so wrapping the instance method sees every batch.
  worker.runOnce = async () => {
    const started = Date.now();
    if (lastEnd !== undefined) result.longestGapMs = Math.max(result.longestGapMs, started - lastEnd);
    const run = await runOnce();
    const now = Date.now();
    // Gaps after productive runs only: idle sleeps before the first hold and after the last are expected.
    lastEnd = run.expired.length > 0 ? now : undefined;
    result.slowestRunMs = Math.max(result.slowestRunMs, now - started);
    for (const hold of run.expired) result.committedLateness.push(now - hold.expires_at.getTime());
    return run;
  };
  return result;
}

async function waitUntilDrained(pool: pg.Pool, schema: string, expected: number, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${ident(schema)}.support_reservations WHERE status = 'expired'`,
    );
    if (rows[0]!.n >= expected) return;
    await sleep(500);
  }
  throw new Error(`expiry lateness: not all ${expected} holds expired before the deadline`);
}

async function databaseLateness(pool: pg.Pool, schema: string, instrumented: Instrumented): Promise<Lateness> {
  const committed = instrumented.committedLateness;
  const { rows } = await pool.query<{ n: number; p50: number; p99: number; max: number }>(
    `SELECT count(*)::int AS n,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99,
            max(ms) AS max
       FROM (SELECT extract(epoch FROM expired_at - expires_at)::float8 * 1000 AS ms
               FROM ${ident(schema)}.support_reservations WHERE status = 'expired') l`,
  );
  const r = rows[0]!;
  return {
    holds: r.n,
    p50: round(r.p50),
    p99: round(r.p99),
    max: round(r.max),
    committedP50: round(percentile(committed, 50)),
    committedP99: round(percentile(committed, 99)),
    committedMax: round(Math.max(...committed)),
    slowestRunMs: instrumented.slowestRunMs,
    longestGapMs: instrumented.longestGapMs,
  };
}

async function seeded(db: BenchDatabase): Promise<Lateness> {
  const target = await db.freshSchema('expiry_lateness');
  try {
    const total = RATE * SECONDS;
    await seedHolds(target.pool, target.schema, total, { firstDueMs: LEAD_MS, spacingMs: 1000 / RATE });
    await target.pool.query('CHECKPOINT').catch(() => {});
    const instrumented = instrumentedWorker(target.pool, target.schema);
    instrumented.worker.start();
    try {
      await waitUntilDrained(target.pool, target.schema, total, Date.now() + LEAD_MS + SECONDS * 1000 + 30_000);
    } finally {
      await instrumented.worker.stop();
    }
    return await databaseLateness(target.pool, target.schema, instrumented);
  } finally {
    await target.drop();
  }
}

async function live(db: BenchDatabase): Promise<Lateness> {
  const target = await db.freshSchema('expiry_lateness_live', 12);
  try {
    await target.pool.query('CHECKPOINT').catch(() => {});
    const instrumented = instrumentedWorker(target.pool, target.schema);
    const worker = instrumented.worker;
    worker.start();
    const total = RATE * LIVE_SECONDS;
    let created = 0;
    const started = Date.now();
    try {
      // Create holds at RATE per second, a slice every 10 ms, each a real createHold.
      while (created < total) {
        const due = Math.min(total, Math.floor(((Date.now() - started) / 1000) * RATE));
        const slice: Promise<unknown>[] = [];
        for (; created < due; created++) {
          slice.push(createHold(target.pool, { customerEmail: `live${created}@example.com`, ttlSeconds: 1 }, { schema: target.schema }));
        }
        await Promise.all(slice);
        await sleep(10);
      }
      await waitUntilDrained(target.pool, target.schema, total, Date.now() + 30_000);
    } finally {
      await worker.stop();
    }
    return await databaseLateness(target.pool, target.schema, instrumented);
  } finally {
    await target.drop();
  }
}

export const expiryLateness: Benchmark = {
  name: 'expiry-lateness',
  description: `${RATE} holds/s falling due for ${SECONDS} s (seeded) and ${LIVE_SECONDS} s (created live), running ExpiryWorker`,
  async run(db): Promise<BenchResult> {
    const a = await seeded(db);
    const b = LIVE_SECONDS > 0 ? await live(db) : undefined;
    const figures: Figure[] = [
      { name: 'seeded: lateness p50', value: a.p50, unit: 'ms' },
      { name: 'seeded: lateness p99', value: a.p99, unit: 'ms', target: '<= 100' },
      { name: 'seeded: lateness max', value: a.max, unit: 'ms' },
      { name: 'seeded: visible (after commit) p99', value: a.committedP99, unit: 'ms' },
      { name: 'seeded: slowest run / longest gap', value: a.slowestRunMs, unit: `ms / ${a.longestGapMs} ms` },
    ];
    if (b) {
      figures.push(
        { name: 'live: lateness p50', value: b.p50, unit: 'ms' },
        { name: 'live: lateness p99', value: b.p99, unit: 'ms', target: '<= 100' },
        { name: 'live: lateness max', value: b.max, unit: 'ms' },
        { name: 'live: visible (after commit) p99', value: b.committedP99, unit: 'ms' },
        { name: 'live: slowest run / longest gap', value: b.slowestRunMs, unit: `ms / ${b.longestGapMs} ms` },
      );
    }
    return { figures, details: { rate: RATE, seconds: SECONDS, liveSeconds: LIVE_SECONDS, seeded: a, live: b } };
  },
};
