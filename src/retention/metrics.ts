import { Gauge, Registry } from 'prom-client';
import type { Queryable } from '../db/pool.js';
import { RETENTION_TABLES, type RetentionTables } from './policy.js';
import { type RetentionPolicy } from '../model/retention-policy.js';
import { retentionOldest } from './preview.js';
import { scrapeSnapshot } from '../observability/scrape.js';

/**
 * Retention gauges, read from the database at scrape time like the lane
 * gauges (every instance reports the same numbers: aggregate with max()).
 * With the policy and the oldest ages side by side, an alert can say
 * "prune is not keeping up" without knowing the configuration.
 */
export interface RetentionMetricsOptions {
  db: Queryable;
  schema: string;
  policy: Pick<RetentionPolicy, 'retentionDays' | 'erasePiiAfterDays'>;
  tables?: RetentionTables;
  /** Reuse one database read for all gauges of a scrape (default 500 ms). */
  snapshotTtlMs?: number;
}

export function createRetentionMetrics(options: RetentionMetricsOptions): Registry {
  const registry = new Registry();
  const registers = [registry];
  const snapshot = scrapeSnapshot(() => retentionOldest(options.db, options.schema, options.tables ?? RETENTION_TABLES), options.snapshotTtlMs);
  // `off` is NaN, not 0 or -1: a rule comparing an age against it never fires.
  const days = (value: number | null) => value ?? Number.NaN;

  new Gauge({
    name: 'leasehold_retention_oldest_age_seconds',
    help: 'Seconds since the oldest finished row still kept ended (support_reservations: the oldest finished story); compare with leasehold_retention_days.',
    labelNames: ['table'],
    registers,
    async collect() {
      const oldest = await snapshot();
      this.reset();
      if (!oldest) return;
      for (const [table, seconds] of Object.entries(oldest.oldestAgeSeconds)) this.set({ table }, seconds);
    },
  });
  new Gauge({
    name: 'leasehold_retention_oldest_unerased_age_seconds',
    help: 'Seconds since the oldest finished story whose personal data is not erased yet ended; compare with leasehold_erase_pii_after_days.',
    registers,
    async collect() {
      this.set((await snapshot())?.oldestUnerasedAgeSeconds ?? Number.NaN);
    },
  });
  new Gauge({
    name: 'leasehold_retention_days',
    help: 'LEASEHOLD_RETENTION_DAYS: finished stories are deleted this long after they end (NaN: off).',
    registers,
    collect() {
      this.set(days(options.policy.retentionDays));
    },
  });
  new Gauge({
    name: 'leasehold_erase_pii_after_days',
    help: 'LEASEHOLD_ERASE_PII_AFTER_DAYS: personal data is erased this long after a story ends (NaN: off).',
    registers,
    collect() {
      this.set(days(options.policy.erasePiiAfterDays));
    },
  });
  return registry;
}
