import type { Command } from 'commander';
import { intentsChannel, Listener } from '../../db/listener.js';
import { rateLimiterEnsure } from '../../tables/rate-limiter.js';
import { DeliveryWorker } from '../../delivery/worker.js';
import { ingestEvents } from '../../events/ingest.js';
import { webhookSettingsFromEnv } from '../../events/webhook-config.js';
import { ExpiryWorker } from '../../holds/expiry-worker.js';
import { createMetrics } from '../../observability/metrics.js';
import { createGateway } from '../../providers/registry.js';
import { PruneWorker } from '../../retention/prune-worker.js';
import { SandboxGateway } from '../../providers/sandbox.js';
import { onShutdownSignals } from '../../runtime/shutdown.js';
import { startApiServer } from '../../server/app.js';
import type { ContextFactory } from '../context.js';
import type { CommandContext } from '../context.js';
import { resolveApiToken } from './api.js';
import { hostArg } from './args.js';
import { checkedTemplates } from './templates.js';

interface Lanes {
  expiry: boolean;
  delivery: boolean;
  api: boolean;
  /** --host, overriding LEASEHOLD_HOST. */
  host?: string;
  /** The retention policy's prune worker (safe to run in every process). */
  retention?: boolean;
}

/**
 * Run the chosen lanes (and the API) in this process until a signal drains
 * them: the API stops accepting, the expiry worker finishes its transaction,
 * the delivery worker finishes its sends and records them, then the database
 * closes. A second signal exits at once; nothing is lost either way.
 */
async function runLanes(ctx: CommandContext, lanes: Lanes): Promise<void> {
  const { config, logger } = ctx;
  // Providers validate their own variables before anything starts.
  const gateway = lanes.delivery ? createGateway(config) : undefined;
  const webhooks = lanes.api ? webhookSettingsFromEnv(config.env) : undefined;
  // So do the templates: a broken one refuses the start (exit 2), not the first send.
  const templates = lanes.delivery ? checkedTemplates(config) : undefined;
  const db = await ctx.database({ poolSize: 12, migrations: 'apply' });
  const metrics = createMetrics();
  const stops: Array<() => Promise<void>> = [];
  // Printed once the signal handlers are in place: a supervisor that sends
  // SIGTERM as soon as it reads "listening" must get a drain, not a death.
  const announcements: string[] = [];
  try {
    await rateLimiterEnsure(db.pool, db.schema, { perSecond: config.ratePerSecond, burst: config.rateBurst });
    if (lanes.api) {
      const { token, generated } = resolveApiToken(config.apiToken);
      const server = await startApiServer({
        pool: db.pool,
        schema: db.schema,
        config,
        logger,
        metrics,
        apiToken: token,
        port: config.port,
        host: lanes.host ?? config.host,
        webhooks,
      });
      stops.push(() => server.close());
      if (generated) announcements.push(`API token (generated for this run; set LEASEHOLD_API_TOKEN to keep one): ${token}`);
      announcements.push(`leasehold API listening on ${server.url} (dashboard: ${server.url}/)`);
    }
    let delivery: DeliveryWorker | undefined;
    if (lanes.delivery && gateway) {
      delivery = new DeliveryWorker({
        pool: db.pool,
        schema: db.schema,
        gateway,
        from: config.emailFrom,
        templates,
        batchSize: config.deliveryBatch,
        concurrency: config.deliveryConcurrency,
        leaseMs: config.leaseMs,
        sendTimeoutMs: config.sendTimeoutMs,
        maxAttempts: config.maxAttempts,
        initialRate: { perSecond: config.ratePerSecond, burst: config.rateBurst },
        logger,
        metrics,
      });
      const worker = delivery;
      if (gateway instanceof SandboxGateway) {
        // The sandbox reports delivered/bounced/complained into the same ingestion path as the webhooks.
        gateway.connectEvents((events) =>
          ingestEvents(db.pool, db.schema, events, { logger, metrics }).catch((error: unknown) =>
            logger.warn({ event: 'sandbox.events_failed', error: (error as Error)?.message }, 'sandbox events not stored'),
          ),
        );
      }
      const listener = new Listener(db.url, intentsChannel(db.schema), () => worker.wake(), logger);
      listener.start();
      worker.start();
      stops.push(async () => {
        await listener.stop();
        await worker.stop();
        await gateway.close?.();
      });
      logger.info({ event: 'delivery_worker.started', provider: gateway.name }, 'delivery worker started');
      announcements.push(`delivery lane running (provider ${gateway.name})`);
    }
    if (lanes.expiry) {
      const worker = new ExpiryWorker({
        pool: db.pool,
        schema: db.schema,
        intervalMs: config.expiryIntervalMs,
        batchSize: config.expiryBatch,
        logger,
        metrics,
      });
      worker.start();
      stops.unshift(() => worker.stop());
      logger.info({ event: 'expiry_worker.started', intervalMs: config.expiryIntervalMs }, 'expiry worker started');
      announcements.push('expiry lane running');
    }
    if (lanes.retention) {
      const worker = new PruneWorker({ pool: db.pool, schema: db.schema, policy: config.retention, logger, metrics });
      worker.start();
      stops.unshift(() => worker.stop());
      logger.info({ event: 'retention_worker.started', ...config.retention }, 'retention worker started');
    }
  } catch (error) {
    for (const stop of stops) await stop().catch(() => {});
    await db.close();
    throw error;
  }
  await new Promise<void>((resolve) => {
    onShutdownSignals(
      async () => {
        for (const stop of stops) await stop();
        await db.close();
      },
      logger,
      { exit: (code) => (code === 0 ? resolve() : process.exit(code)) },
    );
    for (const line of announcements) ctx.out(line);
  });
}

export function registerWorkers(program: Command, context: ContextFactory): void {
  program
    .command('expiry-worker')
    .description('run the expiry lane: expire due holds and write their email intents (any number may run)')
    .action(async () => runLanes(context(), { expiry: true, delivery: false, api: false, retention: false }));

  program
    .command('delivery-worker')
    .description('run the delivery lane: lease intents, take permits from the shared limiter, send, record (any number may run)')
    .action(async () => runLanes(context(), { expiry: false, delivery: true, api: false, retention: false }));

  program
    .command('start')
    .description('run leasehold: migrations, the HTTP API on PORT, both lanes and the retention policy (SIGTERM/SIGINT drains, a second signal forces)')
    .option('--host <address>', 'interface the API listens on (default LEASEHOLD_HOST, else 127.0.0.1)', hostArg)
    .action(async (options: { host?: string }) =>
      runLanes(context(), { expiry: true, delivery: true, api: true, retention: true, ...(options.host ? { host: options.host } : {}) }),
    );
}
