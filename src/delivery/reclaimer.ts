import type pg from 'pg';
import type { Queryable } from '../db/pool.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { TickResult } from '../runtime/loop.js';
import { intentsLeaseOwnersGone, intentsReclaimGone } from '../tables/outbox.js';
import { notifyIntents } from '../db/listener.js';

export interface ReclaimerOptions {
  pool: pg.Pool;
  /** A connection of its own to use instead of the pool while there is one (the worker's presence session). */
  session?: () => Queryable | undefined;
  schema: string;
  /** An owner must have been seen gone at least this long before its leases are taken. */
  graceMs: number;
  logger: Logger;
  metrics?: Metrics;
  /** Leases were reclaimed: their intents are due now. */
  onReclaimed: (count: number) => void;
  now?: () => number;
}

/**
 * Takes back the leases of delivery workers that are gone (their presence
 * lock is free, db/presence.ts), in seconds rather than after the lease
 * expires. Every delivery worker runs one, beside its rounds; what they do
 * is idempotent, so any number may.
 *
 * An owner is taken only when seen gone twice, `graceMs` apart: a worker
 * whose session blinked (a purge of backends, a reconnect) has its lock
 * back within milliseconds and keeps its leases and the sends in flight
 * under them. The memory of who was seen gone when is only a timing aid: a
 * new reclaimer simply waits one grace period before its first reclaim.
 */
export class LeaseReclaimer {
  private readonly suspects = new Map<number, number>();
  private readonly now: () => number;

  constructor(private readonly options: ReclaimerOptions) {
    this.now = options.now ?? Date.now;
  }

  async tick(): Promise<TickResult> {
    const { schema, graceMs, logger, metrics } = this.options;
    const db = this.options.session?.() ?? this.options.pool;
    const gone = await intentsLeaseOwnersGone(db, schema);
    const now = this.now();
    const seen = new Set(gone);
    for (const owner of [...this.suspects.keys()]) if (!seen.has(owner)) this.suspects.delete(owner);
    for (const owner of gone) if (!this.suspects.has(owner)) this.suspects.set(owner, now);
    const confirmed = gone.filter((owner) => now - this.suspects.get(owner)! >= graceMs);
    if (confirmed.length === 0) return { full: false };
    const reclaimed = await intentsReclaimGone(db, schema, confirmed);
    if (reclaimed.length > 0) {
      metrics?.leasesReclaimed.inc(reclaimed.length);
      const owners = [...new Set(reclaimed.map((r) => r.owner))];
      logger.warn(
        { event: 'lease.reclaimed', owners, intents: reclaimed.length },
        "leases of a delivery worker that is gone reclaimed (their sends' outcome is unknown)",
      );
      this.options.onReclaimed(reclaimed.length);
      // Every delivery worker listening hears of it (the expiry lane's
      // channel), not only this one: the first round free takes them.
      await notifyIntents(db, schema, 'reclaimed').catch(() => {});
    }
    return { full: false };
  }
}
