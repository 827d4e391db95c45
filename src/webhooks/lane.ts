import type pg from 'pg';
import type { Config } from '../config.js';
import type { WebhookEndpoint } from '../model/webhook-events.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { webhookEndpointsList } from '../tables/webhook-endpoints.js';
import { warnUnserved, WebhookWorker, type WebhookWorkerOptions } from './worker.js';

/**
 * The webhook lane of a process that runs the delivery lane: started when
 * endpoints are configured. A process without any leaves the endpoints
 * table as it is (another process may deliver them; a restart with a
 * configuration missing them must not stop their events) and warns when
 * some are active; an operator turns one off with `leasehold webhooks
 * deactivate`. Every delivery process should be given the same endpoints.
 */
export async function startWebhookLane(
  endpoints: readonly WebhookEndpoint[],
  config: Config,
  base: { pool: pg.Pool; schema: string; logger: Logger; metrics?: Metrics },
  extra: Partial<WebhookWorkerOptions> = {},
): Promise<WebhookWorker | undefined> {
  if (endpoints.length === 0) {
    const active = (await webhookEndpointsList(base.pool, base.schema)).filter((e) => e.active).map((e) => e.name);
    if (active.length > 0) warnUnserved(base.logger, active);
    return undefined;
  }
  const worker = new WebhookWorker({
    pool: base.pool,
    schema: base.schema,
    endpoints,
    timeoutMs: config.webhookTimeoutMs,
    giveUpAfterMs: config.webhookGiveUpAfterS * 1000,
    logger: base.logger,
    ...(base.metrics ? { metrics: base.metrics } : {}),
    ...extra,
  });
  // Before the lane's first tick: events of changes from now on are written for these endpoints.
  await worker.prepare();
  worker.start();
  base.logger.info({ event: 'webhook_worker.started', endpoints: endpoints.map((e) => e.name) }, 'webhook lane started');
  return worker;
}
