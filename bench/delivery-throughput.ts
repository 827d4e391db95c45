import { ident } from '../src/db/pool.js';
import { rateLimiterSet } from '../src/tables/rate-limiter.js';
import type { Benchmark, BenchResult, Figure } from './common.js';
import { round } from './common.js';
import { startChild } from './children.js';
import type { BenchDatabase } from './database.js';
import { seedPendingIntents } from './seed.js';

/**
 * Intents sent per second by DeliveryWorker processes (bench/delivery-child)
 * draining a backlog of pending intents through an instant SandboxGateway,
 * with the shared limiter effectively uncapped (1e6/s, burst 1e6): the cost
 * of the lane itself (limiter take, lease, render and store, send, record).
 * Each process runs the worker as a service does (`start()`), with
 * concurrency twice the batch (at most 1,000), so two rounds overlap as with
 * the defaults (batch 50, concurrency 100). Batch sizes are swept with one
 * process; the best is then run with two processes.
 * Rate = intents / (last sent_at - the moment all processes were told to go).
 */
const INTENTS = Number(process.env.BENCH_DELIVERY_INTENTS ?? 50_000);
const BATCHES = (process.env.BENCH_DELIVERY_BATCHES ?? '50,200,500,1000').split(',').map(Number);

/** Two rounds in flight, as the defaults run (the worker allows at most 1,000 sends in flight). */
const concurrencyFor = (batch: number) => Math.min(1000, 2 * batch);

interface Drain {
  batch: number;
  processes: number;
  perSecond: number;
}

async function drain(db: BenchDatabase, batch: number, processes: number, presence = false, accounts: 1 | 2 = 1): Promise<Drain> {
  const target = await db.freshSchema('delivery_throughput');
  try {
    await seedPendingIntents(target.pool, target.schema, INTENTS);
    for (const name of accounts === 2 ? ['primary', 'backup'] : ['default']) {
      await rateLimiterSet(target.pool, target.schema, { perSecond: 1_000_000, burst: 1_000_000 }, null, name);
    }
    await target.pool.query('CHECKPOINT').catch(() => {});
    const env = {
      ...target.env,
      BENCH_BATCH: String(batch),
      BENCH_CONCURRENCY: String(concurrencyFor(batch)),
      BENCH_MODE: 'drain',
      BENCH_PRESENCE: presence ? '1' : '0',
      BENCH_ACCOUNTS: String(accounts),
    };
    const children = Array.from({ length: processes }, () => startChild('delivery-child', env));
    await Promise.all(children.map((c) => c.ready));
    const startAt = Date.now();
    for (const child of children) child.go();
    const sent = (await Promise.all(children.map((c) => c.done))).reduce((a, b) => a + b, 0);
    const s = ident(target.schema);
    const { rows } = await target.pool.query<{ sent: number; last: Date }>(
      `SELECT count(*)::int AS sent, max(sent_at) AS last FROM ${s}.email_outbox WHERE state = 'sent'`,
    );
    const row = rows[0]!;
    if (row.sent !== INTENTS || sent < INTENTS) {
      throw new Error(`delivery drained ${row.sent} intents (gateway accepted ${sent}), expected ${INTENTS}`);
    }
    return { batch, processes, perSecond: INTENTS / ((row.last.getTime() - startAt) / 1000) };
  } finally {
    await target.drop();
  }
}

export const deliveryThroughput: Benchmark = {
  name: 'delivery-throughput',
  description: `DeliveryWorker draining ${INTENTS} pending intents, instant sandbox, no rate cap`,
  async run(db): Promise<BenchResult> {
    const sweep: Drain[] = [];
    for (const batch of BATCHES) sweep.push(await drain(db, batch, 1));
    const best = sweep.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
    const two = await drain(db, best.batch, 2);
    // The owner check a lease makes when its worker holds a presence lock
    // (as the service's workers do): the same drain, interleaved with one
    // without, so the ratio compares runs of one moment.
    const owned = await drain(db, best.batch, 1, true);
    const unowned = await drain(db, best.batch, 1, false);
    // Two provider accounts, the backup on standby (every intent on the
    // primary): the per-round read of the accounts and the standby leg,
    // against one account, interleaved likewise.
    // Alternated (two, one, one, two) so a drift of the machine favours neither.
    const pairs = [
      await drain(db, best.batch, 1, false, 2),
      await drain(db, best.batch, 1, false, 1),
      await drain(db, best.batch, 1, false, 1),
      await drain(db, best.batch, 1, false, 2),
    ];
    const mean = (runs: Drain[]) => ({ ...runs[0]!, perSecond: runs.reduce((a, r) => a + r.perSecond, 0) / runs.length });
    const twoAccounts = mean([pairs[0]!, pairs[3]!]);
    const oneAccount = mean([pairs[1]!, pairs[2]!]);
    const figures: Figure[] = sweep.map((d) => ({
      name: `1 process, batch ${d.batch}, concurrency ${concurrencyFor(d.batch)}`,
      value: Math.round(d.perSecond),
      unit: 'intents/s',
    }));
    figures.push({ name: `2 processes, batch ${two.batch}, concurrency ${concurrencyFor(two.batch)}`, value: Math.round(two.perSecond), unit: 'intents/s' });
    figures.push({ name: `1 process, batch ${best.batch}, leases naming their owner`, value: Math.round(owned.perSecond), unit: 'intents/s' });
    figures.push({ name: 'owner check: owned / unowned drain rate', value: round(owned.perSecond / unowned.perSecond, 3), unit: 'ratio' });
    figures.push({ name: `1 process, batch ${best.batch}, two accounts (backup on standby)`, value: Math.round(twoAccounts.perSecond), unit: 'intents/s' });
    figures.push({ name: 'accounts: two / one drain rate', value: round(twoAccounts.perSecond / oneAccount.perSecond, 3), unit: 'ratio' });
    figures.push({
      name: 'best',
      value: Math.round(Math.max(best.perSecond, two.perSecond)),
      unit: 'intents/s',
      target: '>= 11000',
    });
    return {
      figures,
      details: { intents: INTENTS, sweep: sweep.map((d) => ({ ...d, perSecond: round(d.perSecond, 0) })), twoProcesses: two, owned, unowned, twoAccounts, oneAccount },
    };
  },
};
