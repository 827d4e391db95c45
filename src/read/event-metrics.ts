import type { Registry } from 'prom-client';
import { scrapeSnapshot, snapshotGauges } from '../observability/scrape.js';
import { readAll, type Queryable } from '../db/pool.js';
import { eventsWindowStats, type EventWindowStats } from '../tables/events.js';
import { suppressionCountGet } from '../tables/suppression-count.js';

/**
 * Reputation gauges read from the database at scrape time, so every
 * instance reports the same numbers (aggregate with max()). Rates are over
 * a rolling window and follow the providers' own definitions: hard bounces
 * (soft ones do not count) and complaints per accepted send.
 */

export const EVENT_WINDOW_HOURS = 24;

export function registerEventMetrics(registry: Registry, options: { db: Queryable; schema: string; snapshotTtlMs?: number }): Registry {
  const snapshot = scrapeSnapshot(
    () =>
      readAll(options.db, [
        () => eventsWindowStats(options.db, options.schema, EVENT_WINDOW_HOURS),
        () => suppressionCountGet(options.db, options.schema),
      ] as const).then(([stats, suppressions]) => ({ ...stats, suppressions })),
    options.snapshotTtlMs,
  );
  const rate = (part: number, whole: number) => (whole > 0 ? part / whole : 0);
  const gauge = snapshotGauges(registry, snapshot);
  gauge(
    'leasehold_email_bounce_rate',
    `Hard bounces per accepted send over the last ${EVENT_WINDOW_HOURS} h (providers review accounts above about 0.05).`,
    (s) => rate(s.hardBounces, s.accepted),
  );
  gauge(
    'leasehold_email_complaint_rate',
    `Spam complaints per accepted send over the last ${EVENT_WINDOW_HOURS} h (providers review accounts above about 0.001).`,
    (s) => rate(s.complaints, s.accepted),
  );
  gauge('leasehold_email_accepted_24h', `Sends accepted by the provider over the last ${EVENT_WINDOW_HOURS} h (the rates' denominator).`, (s) => s.accepted);
  gauge('leasehold_suppressions', 'Addresses on the suppression list.', (s) => s.suppressions);
  return registry;
}
