import type { Command } from 'commander';
import { ExpiryWorker } from '../../holds/expiry-worker.js';
import { createMetrics } from '../../observability/metrics.js';
import { onShutdownSignals } from '../../runtime/shutdown.js';
import type { ContextFactory } from '../main.js';
import type { CommandContext } from '../context.js';

/** Start the expiry lane in this process; resolves when a signal has drained it. */
async function runLanes(ctx: CommandContext, lanes: { expiry: boolean }): Promise<void> {
  const { config, logger } = ctx;
  const db = await ctx.database({ poolSize: 10 });
  const metrics = createMetrics();
  const stops: Array<() => Promise<void>> = [];
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
    stops.push(() => worker.stop());
    logger.info(
      { event: 'expiry_worker.started', intervalMs: config.expiryIntervalMs, batch: config.expiryBatch },
      'expiry worker started',
    );
  }
  await new Promise<void>((resolve) => {
    onShutdownSignals(async () => {
      await Promise.all(stops.map((stop) => stop()));
      await db.close();
    }, logger, { exit: (code) => (code === 0 ? resolve() : process.exit(code)) });
  });
}

export function registerWorkers(program: Command, context: ContextFactory): void {
  program
    .command('expiry-worker')
    .description('run the expiry lane: expire due holds and write their email intents (any number may run)')
    .action(async () => runLanes(context(), { expiry: true }));

  program
    .command('start')
    .description('run leasehold: migrations, then the expiry lane (SIGTERM/SIGINT drains, a second signal forces)')
    .action(async () => runLanes(context(), { expiry: true }));
}
