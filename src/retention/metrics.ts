import { Gauge, type Registry } from 'prom-client';
import type { RetentionPolicy } from '../model/retention-policy.js';
import type { OldestRetained } from './preview.js';

/**
 * Retention gauges, read from the database at scrape time like the lane
 * gauges (every instance reports the same numbers: aggregate with max()),
 * from the scrape's one reading (read/scrape.ts). With the policy and the
 * oldest ages side by side, an alert can say "prune is not keeping up"
 * without knowing the configuration.
 */
export function registerRetentionGauges(
  registry: Registry,
  snapshot: () => Promise<OldestRetained | undefined>,
  policy: Pick<RetentionPolicy, 'retentionDays' | 'erasePiiAfterDays'>,
): void {
  const registers = [registry];
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
      this.set(days(policy.retentionDays));
    },
  });
  new Gauge({
    name: 'leasehold_erase_pii_after_days',
    help: 'LEASEHOLD_ERASE_PII_AFTER_DAYS: personal data is erased this long after a story ends (NaN: off).',
    registers,
    collect() {
      this.set(days(policy.erasePiiAfterDays));
    },
  });
}
