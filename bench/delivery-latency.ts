import type pg from 'pg';
import { intentsChannel, Listener } from '../src/db/listener.js';
import { ident } from '../src/db/pool.js';
import { rateLimiterSet } from '../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../src/delivery/worker.js';
import { ExpiryWorker } from '../src/holds/expiry-worker.js';
import { silentLogger } from '../src/observability/logger.js';
import { SandboxGateway } from '../src/providers/sandbox.js';
import type { Benchmark, BenchResult, Figure } from './common.js';
import { round, sleep } from './common.js';
import type { BenchDatabase } from './database.js';
import { seedHolds } from './seed.js';

/**
 * End-to-end latency with no backlog: holds fall due at 50/s for 10 s while
 * an ExpiryWorker and a DeliveryWorker run (start(), defaults: batch 50,
 * concurrency 8, instant sandbox, limiter 1000/s so it never queues), wired
 * as `leasehold start` wires them: the expiry transaction NOTIFYs, the
 * delivery worker LISTENs and wakes. Measured from the rows:
 * sent_at - expires_at (whole path), split into expired_at - expires_at and
 * sent_at - expired_at. A second run without the listener shows the
 * delivery lane's own polling (what a delivery process that cannot LISTEN gets).
 */
const RATE = Number(process.env.BENCH_E2E_RATE ?? 50);
const SECONDS = Number(process.env.BENCH_E2E_SECONDS ?? 10);

interface Latency {
  n: number;
  p50: number;
  p99: number;
  max: number;
  expiryP99: number;
  deliveryP50: number;
  deliveryP99: number;
}

async function measure(pool: pg.Pool, schema: string): Promise<Latency> {
  const { rows } = await pool.query<Latency>(
    `WITH l AS (
       SELECT extract(epoch FROM o.sent_at - r.expires_at)::float8 * 1000 AS total,
              extract(epoch FROM r.expired_at - r.expires_at)::float8 * 1000 AS expiry,
              extract(epoch FROM o.sent_at - r.expired_at)::float8 * 1000 AS delivery
         FROM ${ident(schema)}.email_outbox o JOIN ${ident(schema)}.support_reservations r ON r.id = o.reservation_id
        WHERE o.state = 'sent'
     )
     SELECT count(*)::int AS n,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY total) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY total) AS p99,
            max(total) AS max,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY expiry) AS "expiryP99",
            percentile_cont(0.5) WITHIN GROUP (ORDER BY delivery) AS "deliveryP50",
            percentile_cont(0.99) WITHIN GROUP (ORDER BY delivery) AS "deliveryP99"
       FROM l`,
  );
  const r = rows[0]!;
  return {
    n: r.n,
    p50: round(r.p50),
    p99: round(r.p99),
    max: round(r.max),
    expiryP99: round(r.expiryP99),
    deliveryP50: round(r.deliveryP50),
    deliveryP99: round(r.deliveryP99),
  };
}

async function once(db: BenchDatabase, listen: boolean): Promise<Latency> {
  const target = await db.freshSchema('delivery_latency');
  try {
    const total = RATE * SECONDS;
    await seedHolds(target.pool, target.schema, total, { firstDueMs: 2000, spacingMs: 1000 / RATE });
    await rateLimiterSet(target.pool, target.schema, { perSecond: 1000, burst: 1000 });
    const expiry = new ExpiryWorker({ pool: target.pool, schema: target.schema, logger: silentLogger });
    const delivery = new DeliveryWorker({
      pool: target.pool,
      schema: target.schema,
      gateway: new SandboxGateway({ latencyMs: 0 }),
      logger: silentLogger,
    });
    const listener = listen ? new Listener(target.url, intentsChannel(target.schema), () => delivery.wake(), silentLogger) : undefined;
    listener?.start();
    await sleep(200); // LISTEN in place before the first hold falls due
    delivery.start();
    expiry.start();
    try {
      const deadline = Date.now() + 2000 + SECONDS * 1000 + 30_000;
      for (;;) {
        const { rows } = await target.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${ident(target.schema)}.email_outbox WHERE state = 'sent'`,
        );
        if (rows[0]!.n >= total) break;
        if (Date.now() > deadline) throw new Error(`only ${rows[0]!.n} of ${total} intents sent before the deadline`);
        await sleep(500);
      }
    } finally {
      await expiry.stop();
      await delivery.stop();
      await listener?.stop();
    }
    return await measure(target.pool, target.schema);
  } finally {
    await target.drop();
  }
}

export const deliveryLatency: Benchmark = {
  name: 'delivery-latency',
  description: `end-to-end expires_at -> sent_at, ${RATE} holds/s for ${SECONDS} s, both workers running`,
  async run(db): Promise<BenchResult> {
    const notified = await once(db, true);
    const polling = await once(db, false);
    const figures: Figure[] = [
      { name: 'NOTIFY: expires_at -> sent_at p50', value: notified.p50, unit: 'ms' },
      { name: 'NOTIFY: expires_at -> sent_at p99', value: notified.p99, unit: 'ms' },
      { name: 'NOTIFY: expired_at -> sent_at p99', value: notified.deliveryP99, unit: 'ms' },
      { name: 'polling only: expires_at -> sent_at p50', value: polling.p50, unit: 'ms' },
      { name: 'polling only: expires_at -> sent_at p99', value: polling.p99, unit: 'ms' },
    ];
    return { figures, details: { rate: RATE, seconds: SECONDS, notified, polling } };
  },
};
