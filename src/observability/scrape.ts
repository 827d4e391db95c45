import { Gauge, type Registry } from 'prom-client';

/**
 * Gauges read from the database at scrape time. prom-client collects every
 * gauge of a scrape in parallel, so one read, kept for `ttlMs`, serves them
 * all instead of one round of queries per gauge; a failed read is
 * `undefined` (the database is unreachable), never a thrown scrape.
 */
export function scrapeSnapshot<T>(read: () => Promise<T>, ttlMs = 500): () => Promise<T | undefined> {
  let cached: { at: number; value: Promise<T | undefined> } | undefined;
  return () => {
    const now = Date.now();
    if (!cached || now - cached.at > ttlMs) cached = { at: now, value: read().catch(() => undefined) };
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
