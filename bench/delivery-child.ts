/**
 * A delivery process for the delivery benchmarks: one DeliveryWorker with an
 * instant SandboxGateway against DATABASE_URL / LEASEHOLD_SCHEMA.
 *
 *   BENCH_BATCH, BENCH_CONCURRENCY   worker settings (default 50 / 50)
 *   (stdin)                          the process starts working when a line `GO` arrives,
 *                                    so several processes start together
 *   BENCH_MODE=drain                 start() (its round loops, as a service runs them) until
 *                                    no intent is pending, then stop() and exit
 *   BENCH_MODE=run                   start() and run until SIGTERM (drains, then exits)
 *   BENCH_PRESENCE=1                 hold a presence lock on a session of its own, as the
 *                                    service does on its LISTEN session, so each lease names
 *                                    its owner (the owner check in the lease statement)
 *   BENCH_ACCOUNTS=2                 two provider accounts, primary and backup (instant
 *                                    sandboxes), in that failover order: the routing cost
 *
 * Prints `READY` once connected and `DONE <sent>` before exiting.
 */
import pg from 'pg';
import { createPool, ident } from '../src/db/pool.js';
import { Presence } from '../src/db/presence.js';
import { loadConfig } from '../src/config.js';
import { deliveryWorkerFor } from '../src/service.js';
import { silentLogger } from '../src/observability/logger.js';
import { SandboxGateway } from '../src/providers/sandbox.js';

const url = process.env.DATABASE_URL;
const schema = process.env.LEASEHOLD_SCHEMA;
if (!url || !schema) {
  process.stderr.write('delivery-child: DATABASE_URL and LEASEHOLD_SCHEMA are required\n');
  process.exit(2);
}
const batchSize = Number(process.env.BENCH_BATCH ?? 50);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? batchSize);
const mode = process.env.BENCH_MODE ?? 'drain';

const pool = createPool({ connectionString: url, max: 6, applicationName: 'leasehold-bench-delivery' });
const gateway = new SandboxGateway({ latencyMs: 0 });
const presence = new Presence(schema, silentLogger);
const session = process.env.BENCH_PRESENCE === '1' ? new pg.Client({ connectionString: url }) : undefined;
if (session) {
  // A lost session only ends the owner check's measurement; it must not end the process.
  session.on('error', (error) => process.stderr.write(`delivery-child: presence session lost: ${error.message}\n`));
  await session.connect();
  await presence.acquire(session);
}
// Built as the service builds it (src/service.ts): the configured defaults, the benchmark's batch on top.
const backup = new SandboxGateway({ latencyMs: 0 });
const gateways =
  process.env.BENCH_ACCOUNTS === '2'
    ? [
        { account: { name: 'primary', provider: 'sandbox' as const, rate: { perSecond: 1e6, burst: 1e6, unit: 'requests' as const }, settings: {} }, gateway },
        { account: { name: 'backup', provider: 'sandbox' as const, rate: { perSecond: 1e6, burst: 1e6, unit: 'requests' as const }, settings: {} }, gateway: backup },
      ]
    : gateway;
const worker = deliveryWorkerFor(loadConfig(process.env), { pool, schema, logger: silentLogger }, gateways, {
  batchSize,
  concurrency,
  ...(session ? { presence } : {}),
});
await pool.query('SELECT 1');
process.stdout.write('READY\n');

await new Promise<void>((resolve) => {
  let input = '';
  process.stdin.on('data', (d: Buffer) => {
    input += d.toString();
    if (input.includes('GO\n')) resolve();
  });
});
process.stdin.pause();

if (mode === 'drain') {
  worker.start();
  // Overlapping rounds end at different moments: the backlog is gone when no intent is pending.
  const pending = `SELECT EXISTS (SELECT 1 FROM ${ident(schema)}.email_outbox WHERE state = 'pending') AS pending`;
  while ((await pool.query<{ pending: boolean }>(pending)).rows[0]!.pending) await new Promise((r) => setTimeout(r, 20));
  await worker.stop();
} else {
  worker.start();
  await new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
  await worker.stop();
}
process.stdout.write(`DONE ${gateway.acceptedCount + backup.acceptedCount}\n`);
await session?.end();
await pool.end();
