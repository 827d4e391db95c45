import { Gauge, Registry } from 'prom-client';
import type { Queryable } from '../db/pool.js';
import { IntentState } from '../model/intent-states.js';
import { laneStats } from './stats.js';
import { scrapeSnapshot, snapshotGauges } from '../observability/scrape.js';

/**
 * Gauges of shared state, collected from the database at scrape time. Every
 * instance answers with the same numbers, so a dashboard can scrape any of
 * them (or all: take max, not sum). Labels never carry an id or a recipient.
 */

export interface DatabaseMetricsOptions {
  db: Queryable;
  schema: string;
  promises: { expiryPromiseS: number; emailPromiseS: number };
  /** Reuse one database snapshot for all gauges of a scrape (default 500 ms). */
  snapshotTtlMs?: number;
}

/**
 * Register the database gauges on `registry` (a registry of their own is the
 * usual choice, so several apps in one process never collide).
 */
export function registerDatabaseMetrics(registry: Registry, options: DatabaseMetricsOptions): Registry {
  const snapshot = scrapeSnapshot(() => laneStats(options.db, options.schema), options.snapshotTtlMs);
  const registers = [registry];
  const gauge = snapshotGauges(registry, snapshot);

  new Gauge({
    name: 'leasehold_database_up',
    help: '1 when this instance could read lane state from the database at the last scrape.',
    registers,
    async collect() {
      this.set((await snapshot()) ? 1 : 0);
    },
  });
  gauge('leasehold_due_holds', 'Holds past their expires_at still in held (expiry lane queue).', (s) => s.expiry.dueHolds);
  gauge(
    'leasehold_oldest_due_hold_age_seconds',
    'Seconds the oldest due hold has waited past its deadline; compare with leasehold_expiry_promise_seconds.',
    (s) => s.expiry.oldestDueAgeSeconds,
  );
  gauge('leasehold_email_backlog', 'Pending email intents (delivery lane queue).', (s) => s.delivery.backlog);
  gauge(
    'leasehold_oldest_pending_intent_age_seconds',
    'Seconds since the oldest pending intent became available; compare with leasehold_email_promise_seconds.',
    (s) => s.delivery.oldestPendingAgeSeconds,
  );
  new Gauge({
    name: 'leasehold_intents',
    help: 'Email intents by state.',
    labelNames: ['state'],
    registers,
    async collect() {
      const stats = await snapshot();
      this.reset();
      if (!stats) return;
      for (const state of Object.values(IntentState)) this.set({ state }, stats.delivery.intentsByState[state]);
    },
  });
  gauge('leasehold_delivery_paused', '1 while delivery is paused fleet-wide (by an operator or a provider answer).', (s) =>
    s.control.paused ? 1 : 0,
  );
  gauge('leasehold_rate_limit_per_second', 'Shared limiter policy: permits per second.', (s) => s.limiter?.perSecond);
  gauge('leasehold_rate_limit_burst', 'Shared limiter policy: burst.', (s) => s.limiter?.burst);
  new Gauge({
    name: 'leasehold_expiry_promise_seconds',
    help: 'LEASEHOLD_EXPIRY_PROMISE_S: how late a hold may expire.',
    registers,
    collect() {
      this.set(options.promises.expiryPromiseS);
    },
  });
  new Gauge({
    name: 'leasehold_email_promise_seconds',
    help: 'LEASEHOLD_EMAIL_PROMISE_S: how long an email may wait to be accepted.',
    registers,
    collect() {
      this.set(options.promises.emailPromiseS);
    },
  });
  return registry;
}

export function createDatabaseMetrics(options: DatabaseMetricsOptions): Registry {
  return registerDatabaseMetrics(new Registry(), options);
}
