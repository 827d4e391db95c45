import { DEFAULTS } from '../defaults.js';
import type { Queryable } from '../db/pool.js';
import type { Logger } from '../observability/logger.js';
import { databaseClock, type Clock } from '../runtime/clock.js';
import { ServiceLoop, type TickResult } from '../runtime/loop.js';
import { LANE_SAMPLE_INTERVAL_S, laneSamplesRecord, type LaneSample } from '../tables/lane-samples.js';
import { laneStats, type LaneStats } from './stats.js';

/** The numbers of a sample, as `leasehold status` computes them. */
export const sampleOf = (stats: LaneStats): LaneSample => ({
  backlog: stats.delivery.backlog,
  dueHolds: stats.expiry.dueHolds,
  oldestPendingAgeSeconds: stats.delivery.oldestPendingAgeSeconds,
  oldestDueAgeSeconds: stats.expiry.oldestDueAgeSeconds,
});

export interface LaneSamplerOptions {
  db: Queryable;
  schema: string;
  /** The accounts in failover, as status reads them (the first one's limiter is not sampled, but laneStats reads it). */
  failover?: readonly string[];
  logger: Logger;
  /** Which 10 s slot a sample lands in; default the database clock. Tests move it. */
  clock?: Clock;
}

/**
 * Keeps the last hour of both lanes in lane_samples (tables/lane-samples.ts)
 * for the dashboard: every 10 s, one read of the lane numbers (the
 * statement status and health read, read/stats.ts) and one upsert. It runs
 * in the process serving the API (service.ts); several such processes write
 * the same slot with the same numbers, which is harmless, so it needs no
 * leader. Ticks aim at the middle of each 10 s so a clock a few seconds off
 * the database's still fills every slot.
 */
export class LaneSampler {
  private readonly loop: ServiceLoop;
  private readonly clock: Clock;

  constructor(private readonly options: LaneSamplerOptions) {
    this.clock = options.clock ?? databaseClock;
    this.loop = new ServiceLoop({
      name: 'lane_sampler',
      intervalMs: LANE_SAMPLE_INTERVAL_S * 1000,
      logger: options.logger,
      tick: () => this.tick(),
      tickTimeoutMs: DEFAULTS.tickTimeoutMs,
    });
  }

  /** Read both lanes and store the sample in its slot; the sample. */
  async sampleOnce(): Promise<LaneSample> {
    const { db, schema, failover } = this.options;
    const sample = sampleOf(await laneStats(db, schema, failover));
    await laneSamplesRecord(db, schema, sample, this.clock.now());
    return sample;
  }

  start(): void {
    this.loop.start();
  }

  /** Idempotent; resolves once a sample in flight is written. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  private async tick(): Promise<TickResult> {
    await this.sampleOnce();
    const period = LANE_SAMPLE_INTERVAL_S * 1000;
    const toMiddle = (period * 1.5 - (Date.now() % period)) % period;
    return { full: false, nextInMs: toMiddle === 0 ? period : toMiddle };
  }
}
