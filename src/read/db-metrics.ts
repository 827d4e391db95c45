import { Gauge, Registry } from 'prom-client';
import type { Queryable } from '../db/pool.js';
import { IntentState } from '../model/intent-states.js';
import type { LaneStats } from './stats.js';
import { scrapeReading, type ScrapeReading } from './scrape.js';
import { registerReputationGauges } from './event-metrics.js';
import { registerRetentionGauges } from '../retention/metrics.js';
import type { RetentionTables } from '../retention/policy.js';
import type { RetentionPolicy } from '../model/retention-policy.js';
import { scrapeSnapshot, snapshotGauges } from './snapshot.js';
import { tenantsBacklog, type TenantBacklog } from '../tables/tenants.js';
import { registerWebhookGauges } from './webhook-metrics.js';

/**
 * Gauges of shared state, collected from the database at scrape time. Every
 * instance answers with the same numbers, so a dashboard can scrape any of
 * them (or all: take max, not sum). Labels never carry an id or a recipient.
 */

export interface DatabaseMetricsOptions {
  db: Queryable;
  schema: string;
  promises: { expiryPromiseS: number; emailPromiseS: number };
  retention: Pick<RetentionPolicy, 'retentionDays' | 'erasePiiAfterDays'>;
  /** The tables the retention gauges cover (default RETENTION_TABLES). */
  tables?: RetentionTables;
  /** Reuse one database reading for all gauges of a scrape (default 500 ms). */
  snapshotTtlMs?: number;
  /** The provider accounts in failover (default: the one account, `default`). */
  failover?: readonly string[];
  /** Export this many of the largest tenant backlogs with a `tenant` label (LEASEHOLD_TENANT_METRICS=top:N); default none. */
  tenantMetricsTop?: number;
}

/**
 * Every gauge read from the database: the lanes, reputation and retention.
 * All of them read one snapshot, one statement per scrape (read/scrape.ts),
 * kept for `snapshotTtlMs` so the gauges of one scrape share it. A registry
 * of its own, so several apps in one process never collide.
 */
export function createDatabaseMetrics(options: DatabaseMetricsOptions): Registry {
  const registry = new Registry();
  const snapshot = scrapeSnapshot(() => scrapeReading(options.db, options.schema, options.tables, options.failover), options.snapshotTtlMs);
  const part =
    <K extends keyof ScrapeReading>(key: K) =>
    async (): Promise<ScrapeReading[K] | undefined> =>
      (await snapshot())?.[key];
  registerLaneGauges(registry, part('lanes'), options.promises);
  registerReputationGauges(registry, part('reputation'));
  registerRetentionGauges(registry, part('retained'), options.retention);
  if (options.tenantMetricsTop) registerTenantGauges(registry, options, options.tenantMetricsTop);
  registerWebhookGauges(registry, part('webhooks'));
  return registry;
}

/**
 * The `top` tenants with the largest backlogs, labelled by tenant: off by
 * default, since a label per tenant is unbounded; bounded by `top` when
 * asked for. A tenant that leaves the top leaves the gauges. Read once per
 * scrape (its own reading: a pass over the pending intents).
 */
function registerTenantGauges(registry: Registry, options: DatabaseMetricsOptions, top: number): void {
  const reading = scrapeSnapshot(() => tenantsBacklog(options.db, options.schema, top), options.snapshotTtlMs);
  const gauges: Array<[string, string, (t: TenantBacklog) => number]> = [
    ['leasehold_tenant_backlog', `Pending intents of the ${top} tenants with the largest backlogs (LEASEHOLD_TENANT_METRICS).`, (t) => t.backlog],
    ['leasehold_tenant_oldest_pending_age_seconds', `Age of the oldest pending intent of each of those tenants.`, (t) => t.oldestAgeSeconds],
    ['leasehold_tenant_sent_last_minute', 'Emails of each of those tenants accepted in the last minute.', (t) => t.sentLastMinute],
  ];
  for (const [name, help, value] of gauges) {
    new Gauge({
      name,
      help,
      labelNames: ['tenant'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const t of (await reading()) ?? []) this.set({ tenant: t.tenant }, value(t));
      },
    });
  }
}

/** The gauges of both lanes; leasehold_database_up says whether the reading worked. */
function registerLaneGauges(
  registry: Registry,
  snapshot: () => Promise<LaneStats | undefined>,
  promises: DatabaseMetricsOptions['promises'],
): void {
  const registers = [registry];
  const gauge = snapshotGauges(registry, snapshot);

  new Gauge({
    name: 'leasehold_database_up',
    help: '1 when this instance could read the database gauges (lanes, reputation, retention) at the last scrape; 0 and they are NaN when it could not.',
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
  gauge(
    'leasehold_expire_hook_failing_holds',
    "Held holds waiting on the application's expiry hook (LEASEHOLD_EXPIRE_HOOK), which failed for them: each is retried with back-off and is not in leasehold_due_holds.",
    (s) => s.expiry.hookFailing,
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
  gauge('leasehold_rate_limit_per_second', 'Limiter policy of the first account in failover: permits per second.', (s) => s.limiter?.perSecond);
  gauge('leasehold_rate_limit_burst', 'Limiter policy of the first account in failover: burst.', (s) => s.limiter?.burst);
  // One series per provider account: the set is the accounts file's, bounded.
  const perAccount = (name: string, help: string, value: (a: LaneStats['accounts']['states'][number]) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['account'],
      registers,
      async collect() {
        const stats = await snapshot();
        this.reset();
        for (const a of stats?.accounts.states ?? []) this.set({ account: a.account }, value(a));
      },
    });
  perAccount('leasehold_account_rate_limit_per_second', "An account's limiter policy: permits per second (in the account's unit).", (a) => a.perSecond);
  perAccount('leasehold_account_tokens', "Permits in an account's bucket now.", (a) => a.tokens);
  perAccount('leasehold_account_paused', '1 while the account is paused (by a provider answer or an operator); its intents move to the next in failover.', (a) => (a.paused ? 1 : 0));
  perAccount('leasehold_account_cooling_down', '1 while the account cools down after a provider rate limit (429).', (a) => (a.coolingDown ? 1 : 0));
  new Gauge({
    name: 'leasehold_expiry_promise_seconds',
    help: 'LEASEHOLD_EXPIRY_PROMISE_S: how late a hold may expire.',
    registers,
    collect() {
      this.set(promises.expiryPromiseS);
    },
  });
  new Gauge({
    name: 'leasehold_email_promise_seconds',
    help: 'LEASEHOLD_EMAIL_PROMISE_S: how long an email may wait to be accepted.',
    registers,
    collect() {
      this.set(promises.emailPromiseS);
    },
  });
}
