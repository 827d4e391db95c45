import type pg from 'pg';
import type { Config } from '../config.js';
import type { WebhookEndpoint } from '../model/webhook-events.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { webhookEndpointsSync } from '../tables/webhook-endpoints.js';
import { WebhookWorker, type WebhookWorkerOptions } from './worker.js';

/**
 * The webhook lane of a process that runs the delivery lane: started when
 * endpoints are configured. With none, the endpoints table is emptied of
 * active rows, so the triggers stop writing events nobody will deliver
 * (and cost one index probe a statement). Every delivery process should
 * therefore be given the same endpoints.
 */
export async function startWebhookLane(
  endpoints: readonly WebhookEndpoint[],
  config: Config,
  base: { pool: pg.Pool; schema: string; logger: Logger; metrics?: Metrics },
  extra: Partial<WebhookWorkerOptions> = {},
): Promise<WebhookWorker | undefined> {
  if (endpoints.length === 0) {
    await webhookEndpointsSync(base.pool, base.schema, []);
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
