import type { Registry } from 'prom-client';
import { scrapeSnapshot, snapshotGauges } from '../observability/scrape.js';
import { ident, type Queryable } from '../db/pool.js';
import { acceptedInWindowSql } from '../tables/accepted-hours.js';
import { eventsWindowSql } from '../tables/events.js';
import { suppressionCountSql } from '../tables/suppression-count.js';

/**
 * Reputation gauges read from the database at scrape time, so every
 * instance reports the same numbers (aggregate with max()). Rates are over
 * a rolling window of whole UTC hours (the current one and the 23 before
 * it: 23 to 24 h) and follow the providers' own definitions: hard bounces
 * (soft ones do not count) and complaints per accepted send. The sends come
 * from the hourly counts (email_accepted_hours), the events from their
 * partial indexes: no read grows with the day's traffic of sends.
 */

/** At most ACCEPTED_HOURS_KEPT (tables/accepted-hours.ts), the hours the counts are kept for (test/tables/accepted-hours.test.ts checks it). */
export const EVENT_WINDOW_HOURS = 24;

interface ReputationSnapshot {
  accepted: number;
  hardBounces: number;
  complaints: number;
  suppressions: number;
}

/** The sends, bounces and complaints of the window and the suppression count, in one statement of the three modules' fragments. */
async function reputationSnapshot(db: Queryable, schema: string): Promise<ReputationSnapshot> {
  const s = ident(schema);
  const { rows } = await db.query<ReputationSnapshot>(
    `SELECT * FROM (${acceptedInWindowSql(s, '$1::int')}) sends, (${eventsWindowSql(s, '$1::int')}) events, (${suppressionCountSql(s)}) suppressed`,
    [EVENT_WINDOW_HOURS],
  );
  return rows[0]!;
}

export function registerEventMetrics(registry: Registry, options: { db: Queryable; schema: string; snapshotTtlMs?: number }): Registry {
  const snapshot = scrapeSnapshot(
    () =>
      reputationSnapshot(options.db, options.schema),
    options.snapshotTtlMs,
  );
  const rate = (part: number, whole: number) => (whole > 0 ? part / whole : 0);
  const gauge = snapshotGauges(registry, snapshot);
  gauge(
    'leasehold_email_bounce_rate',
    `Hard bounces per accepted send over the last ${EVENT_WINDOW_HOURS} h of whole UTC hours, the current one included (providers review accounts above about 0.05).`,
    (s) => rate(s.hardBounces, s.accepted),
  );
  gauge(
    'leasehold_email_complaint_rate',
    `Spam complaints per accepted send over the last ${EVENT_WINDOW_HOURS} h of whole UTC hours, the current one included (providers review accounts above about 0.001).`,
    (s) => rate(s.complaints, s.accepted),
  );
  gauge('leasehold_email_accepted_24h', `Sends accepted by the provider over the last ${EVENT_WINDOW_HOURS} h of whole UTC hours, the current one included (the rates' denominator).`, (s) => s.accepted);
  gauge('leasehold_suppressions', 'Addresses on the suppression list.', (s) => s.suppressions);
  return registry;
}
