import type pg from 'pg';
import type { Config } from './config.js';
import { DEFAULTS } from './defaults.js';
import { intentsChannel, Listener, notifyIntents } from './db/listener.js';
import type { Presence } from './db/presence.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from './delivery/worker.js';
import { ExpiryWorker, type ExpiryWorkerOptions } from './holds/expiry-worker.js';
import { sqlExpireHook } from './holds/expire-hook.js';
import type { Logger } from './observability/logger.js';
import type { Metrics } from './observability/metrics.js';
import { Operations } from './ops/operations.js';
import type { EmailGateway } from './providers/gateway.js';
import { accountsFromConfig, type AccountGateway } from './providers/registry.js';
import type { Accounts } from './model/accounts.js';
import type { AuditActor } from './model/audit-actions.js';

/**
 * The composition root's builders, one part each, from Config: the expiry
 * lane, the delivery lane, its LISTEN session and the operator actions.
 * service.ts starts them (and re-exports the first three); the CLI's
 * single-lane commands, the benchmarks and the tests build through them too.
 */

/** What every part is built on. */
export interface ServiceBase {
  pool: pg.Pool;
  schema: string;
  logger: Logger;
  metrics?: Metrics;
}

/** The expiry lane as Config says, with `extra` for what only tests and benchmarks set (clock, faults). */
export function expiryWorkerFor(config: Config, base: ServiceBase, extra: Partial<ExpiryWorkerOptions> = {}): ExpiryWorker {
  return new ExpiryWorker({
    pool: base.pool,
    schema: base.schema,
    intervalMs: config.expiryIntervalMs,
    batchSize: config.expiryBatch,
    noticeDeadlineSeconds: config.noticeDeadlineSeconds,
    logger: base.logger,
    ...(base.metrics ? { metrics: base.metrics } : {}),
    ...(config.expireHook ? { onExpired: sqlExpireHook(config.expireHook), hookTimeoutMs: config.expireHookTimeoutMs } : {}),
    ...extra,
  });
}

/** The delivery lane as Config says, sending through `gateway` (one account, `default`) or each account's gateway. */
export function deliveryWorkerFor(
  config: Config,
  base: ServiceBase,
  gateways: EmailGateway | AccountGateway[],
  extra: Partial<DeliveryWorkerOptions> = {},
): DeliveryWorker {
  const routes = Array.isArray(gateways)
    ? {
        accounts: gateways.map(({ account, gateway }) => ({
          name: account.name,
          gateway,
          ...(account.from ? { from: account.from } : {}),
          initialRate: { perSecond: account.rate.perSecond, burst: account.rate.burst },
          ...(account.dailyQuota !== undefined ? { dailyQuota: account.dailyQuota } : {}),
          ...(account.batch !== undefined ? { batch: account.batch } : {}),
          unit: account.rate.unit,
        })),
      }
    : { gateway: gateways };
  const failover = Array.isArray(gateways) ? accountsFromConfig(config).failover.filter((n) => gateways.some((g) => g.account.name === n)) : undefined;
  return new DeliveryWorker({
    ...(failover && failover.length > 0 ? { failover } : {}),
    pool: base.pool,
    schema: base.schema,
    ...routes,
    failoverAfterMs: config.failoverAfterS * 1000,
    from: config.emailFrom,
    batchSize: config.deliveryBatch,
    concurrency: config.deliveryConcurrency,
    leaseMs: config.leaseMs,
    // A lease shortened in `extra` (tests, benchmarks) takes the default
    // timeout for that lease, not the configured lease's.
    sendTimeoutMs: extra.leaseMs !== undefined && extra.sendTimeoutMs === undefined ? DEFAULTS.sendTimeoutMs(extra.leaseMs) : config.sendTimeoutMs,
    maxAttempts: config.maxAttempts,
    initialRate: { perSecond: config.ratePerSecond, burst: config.rateBurst },
    logger: base.logger,
    ...(base.metrics ? { metrics: base.metrics } : {}),
    ...extra,
  });
}

/** The operator actions with this configuration's initial rate policy. */
export function operationsFor(config: Config, base: ServiceBase & { actor?: AuditActor }, accounts: Accounts = accountsFromConfig(config)): Operations {
  return new Operations({
    ...(base.actor ? { actor: base.actor } : {}),
    pool: base.pool,
    schema: base.schema,
    logger: base.logger,
    initialRate: { perSecond: config.ratePerSecond, burst: config.rateBurst },
    accounts,
  });
}

/**
 * The delivery lane's wake-ups: a LISTEN session of its own on
 * LEASEHOLD_LISTEN_URL, else the database's URL, checked with a test
 * NOTIFY sent through the pool as the expiry lane sends its. Where that
 * never arrives (a transaction-mode pooler) it logs `listener.unavailable`
 * once and the lane polls every DEFAULTS.deliveryPollMs.
 */
export function listenerFor(
  config: Config,
  base: Omit<ServiceBase, 'metrics'>,
  databaseUrl: string,
  wake: () => void,
  presence: Presence,
  ownPayload: string,
): Listener {
  return new Listener(config.listenUrl ?? databaseUrl, intentsChannel(base.schema), wake, base.logger, {
    probe: (payload) => notifyIntents(base.pool, base.schema, payload),
    ownPayload,
    // The checked session also carries the worker's presence lock, so
    // other workers reclaim its leases within seconds of its death.
    onSession: (client) => presence.acquire(client),
    onSessionLost: () => presence.lost(),
    connectTimeoutMs: config.dbConnectTimeoutMs,
    queryTimeoutMs: config.dbQueryTimeoutMs,
  });
}
