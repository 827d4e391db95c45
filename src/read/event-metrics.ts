import type { Registry } from 'prom-client';
import { snapshotGauges } from './snapshot.js';
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

/** The window's sends, hard bounces and complaints, and the suppression count. */
export interface Reputation {
  accepted: number;
  hardBounces: number;
  complaints: number;
  suppressions: number;
}

/** The reputation numbers as one row, composed of the three modules' fragments; `hoursParam` holds EVENT_WINDOW_HOURS. */
export function reputationSql(s: string, hoursParam: string): string {
  return `SELECT * FROM (${acceptedInWindowSql(s, hoursParam)}) sends, (${eventsWindowSql(s, hoursParam)}) events, (${suppressionCountSql(s)}) suppressed`;
}

export function reputationFromRow(row: Record<string, unknown>): Reputation {
  return {
    accepted: row.accepted as number,
    hardBounces: row.hardBounces as number,
    complaints: row.complaints as number,
    suppressions: row.suppressions as number,
  };
}

/** The reputation gauges, each reading its number from the scrape's one reading (read/scrape.ts). */
export function registerReputationGauges(registry: Registry, snapshot: () => Promise<Reputation | undefined>): void {
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
}
