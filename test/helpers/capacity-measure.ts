import { Writable } from 'node:stream';
import type pg from 'pg';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createHold } from '../../src/holds/holds.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { createLogger } from '../../src/observability/logger.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';

/**
 * The procedure behind the measured constants in src/capacity/constants.ts:
 * drive `holds` holds through the real code paths (createHold with a
 * generated UUID id, a 26-character address, a 20-minute window and a
 * small metadata object;
 * ExpiryWorker; DeliveryWorker against the instant sandbox), compact the
 * tables with VACUUM FULL, and divide the growth of each table's heap and
 * indexes (main forks, TOAST included) by the rows it holds. Log bytes are
 * what the lanes' real logger wrote per expired hold, plus one `hold.created`
 * line as the API logs it.
 */
export interface RowMeasurement {
  holds: number;
  /** Bytes per row, heap + TOAST + every index, after VACUUM FULL. */
  bytesPerRow: { hold: number; intent: number; attempt: number };
  /** The same after the update cycle, with plain VACUUM only (dead versions' space kept). */
  bytesPerRowUncompacted: { hold: number; intent: number; attempt: number };
  logBytesPerExpiredHold: number;
  /** One API line (hold.created), newline included. */
  logBytesPerApiLine: number;
}

const TABLES = { hold: 'support_reservations', intent: 'email_outbox', attempt: 'email_attempts' } as const;

async function relationBytes(pool: pg.Pool, schema: string, table: string): Promise<number> {
  const { rows } = await pool.query<{ bytes: string }>(
    `SELECT (pg_relation_size(c.oid, 'main')
             + coalesce((SELECT pg_relation_size(c.reltoastrelid, 'main') WHERE c.reltoastrelid <> 0), 0)
             + coalesce((SELECT sum(pg_relation_size(i.indexrelid, 'main')) FROM pg_index i WHERE i.indrelid = c.oid), 0))::text AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    [schema, table],
  );
  return Number(rows[0]!.bytes);
}

async function sizes(pool: pg.Pool, schema: string): Promise<Record<keyof typeof TABLES, number>> {
  return {
    hold: await relationBytes(pool, schema, TABLES.hold),
    intent: await relationBytes(pool, schema, TABLES.intent),
    attempt: await relationBytes(pool, schema, TABLES.attempt),
  };
}

export async function measureRows(pool: pg.Pool, schema: string, holds: number): Promise<RowMeasurement> {
  const s = ident(schema);
  const empty = await sizes(pool, schema);
  let logBytes = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logBytes += chunk.length;
      done();
    },
  });
  const logger = createLogger({ level: 'info', destination: sink });

  // Created two hours ago with a 20-minute window, so they are due now with
  // no extra update (an extra row version would distort the uncompacted size).
  const past = new ManualClock(Date.now() - 2 * 3600_000);
  for (let start = 0; start < holds; start += 20) {
    await Promise.all(
      Array.from({ length: Math.min(20, holds - start) }, (_, k) =>
        createHold(
          pool,
          { customerEmail: `customer.${String(start + k).padStart(6, '0')}@example.com`, ttlSeconds: 1200, metadata: { ticket: `T-${100000 + start + k}` } },
          { schema, clock: past },
        ),
      ),
    );
  }
  // One API `hold.created` line per hold, as src/server/routes/holds.ts logs
  // it through the same logger options.
  const createdLine = JSON.stringify({
    level: 30,
    time: new Date().toISOString(),
    pid: process.pid,
    name: 'leasehold',
    event: 'hold.created',
    holdId: '00000000-0000-4000-8000-000000000000',
    expiresAt: new Date().toISOString(),
    msg: 'hold created',
  });

  const expiry = new ExpiryWorker({ pool, schema, logger });
  while ((await expiry.runOnce()).full);
  await rateLimiterSet(pool, schema, { perSecond: 1_000_000, burst: 1_000_000 });
  const delivery = new DeliveryWorker({
    pool,
    schema,
    gateway: new SandboxGateway({ latencyMs: 0 }),
    batchSize: 500,
    concurrency: 500,
    logger,
  });
  while ((await delivery.runOnce()).leased > 0);
  await new Promise((resolve) => sink.end(resolve));

  const counts = await pool.query<{ holds: number; intents: number; attempts: number }>(
    `SELECT (SELECT count(*)::int FROM ${s}.support_reservations) AS holds,
            (SELECT count(*)::int FROM ${s}.email_outbox WHERE state = 'sent') AS intents,
            (SELECT count(*)::int FROM ${s}.email_attempts) AS attempts`,
  );
  const n = counts.rows[0]!;
  if (n.holds !== holds || n.intents !== holds || n.attempts !== holds) {
    throw new Error(`measurement run incomplete: ${JSON.stringify(n)}`);
  }

  const perRow = (now: Record<keyof typeof TABLES, number>) => ({
    hold: Math.round((now.hold - empty.hold) / holds),
    intent: Math.round((now.intent - empty.intent) / holds),
    attempt: Math.round((now.attempt - empty.attempt) / holds),
  });
  for (const table of Object.values(TABLES)) await pool.query(`VACUUM ${s}.${table}`);
  const uncompacted = perRow(await sizes(pool, schema));
  for (const table of Object.values(TABLES)) await pool.query(`VACUUM FULL ${s}.${table}`);
  const compacted = perRow(await sizes(pool, schema));

  return {
    holds,
    bytesPerRow: compacted,
    bytesPerRowUncompacted: uncompacted,
    logBytesPerExpiredHold: Math.round(logBytes / holds + createdLine.length + 1),
    logBytesPerApiLine: createdLine.length + 1,
  };
}
