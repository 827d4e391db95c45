import { DEFAULTS } from '../defaults.js';
import type { Logger } from '../observability/logger.js';
import { ServiceLoop } from '../runtime/loop.js';
import { DeadlineSweeper } from './deadlines.js';
import { LeaseReclaimer } from './reclaimer.js';
import type pg from 'pg';
import type { Queryable } from '../db/pool.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../runtime/clock.js';

/**
 * What a delivery worker runs beside its rounds, each on a loop of its own:
 * the deadline sweep (once a second: intents past their deadline end
 * missed_deadline, delivery/deadlines.ts) and, unless reclaimIntervalMs is
 * 0, the reclaim of dead workers' leases (delivery/reclaimer.ts). Both use
 * the worker's presence session while it holds one, so neither waits for a
 * pooled connection behind the rounds.
 */
/** The delivery worker's options these loops read (DeliveryWorkerOptions, worker.ts, documents each). */
export interface SideLoopOptions {
  pool: pg.Pool;
  presence?: { readonly session?: Queryable | undefined };
  metrics?: Metrics;
  clock?: Clock;
  reclaimIntervalMs?: number;
  reclaimGraceMs?: number;
}

export function sideLoopsOf(
  options: SideLoopOptions,
  schema: string,
  logger: Logger,
  /** Leases were reclaimed: their intents are due now. */
  wake: () => void,
): { deadlines: DeadlineSweeper; loops: ServiceLoop[] } {
  const deadlines = new DeadlineSweeper({
    db: () => options.presence?.session ?? options.pool,
    schema,
    logger,
    metrics: options.metrics,
    clock: options.clock,
  });
  const loops = [
    new ServiceLoop({
      name: 'delivery.deadlines',
      intervalMs: DEFAULTS.deadlineSweepIntervalMs,
      logger,
      tick: () => deadlines.tick(),
      tickTimeoutMs: DEFAULTS.tickTimeoutMs,
    }),
  ];
  const reclaimIntervalMs = options.reclaimIntervalMs ?? DEFAULTS.reclaimIntervalMs;
  if (reclaimIntervalMs > 0) {
    const reclaimer = new LeaseReclaimer({
      pool: options.pool,
      session: () => options.presence?.session,
      schema,
      graceMs: options.reclaimGraceMs ?? DEFAULTS.reclaimGraceMs,
      logger,
      ...(options.metrics ? { metrics: options.metrics } : {}),
      onReclaimed: () => wake(),
    });
    loops.push(
      new ServiceLoop({
        name: 'delivery.reclaim',
        intervalMs: reclaimIntervalMs,
        // A reclaim is what ends a dead worker's wait: never back off long
        // (its statements are small; after a purge or a restart the pool's
        // next connection usually works at once).
        maxBackoffMs: 250,
        logger,
        tick: () => reclaimer.tick(),
        tickTimeoutMs: DEFAULTS.tickTimeoutMs,
      }),
    );
  }
  return { deadlines, loops };
}
