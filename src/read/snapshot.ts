import { Gauge, type Registry } from 'prom-client';
import { STATUS_READ_TIMEOUT_MS, withTimeout } from '../runtime/timeout.js';

/** One read of a snapshot: when it began, whether it has finished, what it answers. */
interface Reading<T> {
  at: number;
  settled: boolean;
  value: Promise<T | undefined>;
}

/**
 * Gauges read from the database at scrape time. prom-client collects every
 * gauge of a scrape in parallel, so one read serves them all instead of one
 * round of queries per gauge: a read still in flight answers every gauge
 * that asks (however slow the database, a scrape sends one read, and
 * scrapes never pile reads up on a struggling server), and a finished one
 * for `ttlMs` after it began. A failed read, or one with no answer within
 * `timeoutMs`, is `undefined` (the database is unreachable), never a thrown
 * or hung scrape.
 */
export function scrapeSnapshot<T>(read: () => Promise<T>, ttlMs = 500, timeoutMs = STATUS_READ_TIMEOUT_MS): () => Promise<T | undefined> {
  let cached: Reading<T> | undefined;
  return () => {
    const now = Date.now();
    if (!cached || (cached.settled && now - cached.at > ttlMs)) {
      const entry: Reading<T> = { at: now, settled: false, value: Promise.resolve(undefined) };
      entry.value = withTimeout(read(), timeoutMs)
        .catch(() => undefined)
        .finally(() => {
          entry.settled = true;
        });
      cached = entry;
    }
    return cached.value;
  };
}

/**
 * A gauge factory over one snapshot: each gauge reads its number from it.
 * With the database unreachable the value is NaN, not a stale or made-up
 * number (alert rules comparing it stay quiet; leasehold_database_up says why).
 */
export function snapshotGauges<T>(registry: Registry, snapshot: () => Promise<T | undefined>) {
  return (name: string, help: string, read: (value: T) => number | undefined): Gauge =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const value = await snapshot();
        this.set((value === undefined ? undefined : read(value)) ?? Number.NaN);
      },
    });
}
