import type { Command } from 'commander';
import { DEFAULTS } from '../../defaults.js';
import { onShutdownSignals } from '../../runtime/shutdown.js';
import { startTracing, tracingFromEnv } from '../../runtime/tracing-sdk.js';
import type { ServiceParts } from '../../service.js';
import type { CommandContext, ContextFactory } from '../context.js';
import { hostArg } from './args.js';

/**
 * Run the chosen parts (built by src/service.ts) in this process until a
 * signal drains them: the API stops accepting, the expiry worker finishes
 * its transaction, the delivery worker finishes its sends and records them,
 * then the database closes. A second signal exits at once; nothing is lost
 * either way.
 */
export async function runService(ctx: CommandContext, parts: ServiceParts, options: { host?: string } = {}): Promise<void> {
  const { config, logger } = ctx;
  const { prepareService, startService } = await import('../../service.js');
  // Provider variables, templates and webhook secrets are checked before
  // anything connects: a mistake exits 2 without touching the database.
  const prepared = await prepareService(config, parts);
  // OpenTelemetry, only when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT asks for it:
  // a missing SDK package exits 2 here too, before anything connects.
  const tracingSettings = tracingFromEnv(config.env);
  const tracing = tracingSettings ? await startTracing(tracingSettings, logger) : undefined;
  // At most this many pooled connections (LEASEHOLD_POOL_SIZE), plus the
  // delivery lane's LISTEN session: the budget docs/operations.md adds up.
  const poolSize = config.poolSize ?? (parts.delivery || parts.expiry ? DEFAULTS.poolSizeLanes : DEFAULTS.poolSizeApi);
  const db = await ctx.database({ poolSize, migrations: 'apply' }).catch(async (error: unknown) => {
    await tracing?.shutdown();
    throw error;
  });
  let service;
  try {
    service = await startService(prepared, { pool: db.pool, schema: db.schema, logger }, {
      databaseUrl: db.url,
      dbWaitS: config.dbWaitS ?? Infinity,
      ...(options.host ? { host: options.host } : {}),
    });
  } catch (error) {
    await db.close();
    await tracing?.shutdown();
    throw error;
  }
  const running = service;
  // SIGHUP reads LEASEHOLD_API_TOKENS_FILE again; a broken file is refused
  // in one line and the tokens in force stay as they were.
  const reload = () => {
    if (!running.reloadTokens) return;
    running.reloadTokens().then(
      (names) => logger.info({ event: 'tokens.reloaded', tokens: names }, 'API tokens reloaded'),
      (error: unknown) => logger.error({ event: 'tokens.reload_failed', error: (error as Error).message }, 'API tokens not reloaded; the old ones stay in force'),
    );
  };
  process.on('SIGHUP', reload);
  await new Promise<void>((resolve) => {
    onShutdownSignals(
      async () => {
        process.off('SIGHUP', reload);
        await running.stop();
        await db.close();
        // The lanes have drained: their last spans are exported now.
        await tracing?.shutdown();
      },
      logger,
      // Forced (second signal or timeout): leave now, whatever is still open.
      { exit: (code) => (code === 0 ? resolve() : process.exit(code)) },
    );
    // Printed only now: a supervisor that sends SIGTERM as soon as it reads
    // "listening" must get a drain, not the default signal death.
    for (const line of running.announcements) ctx.out(line);
  });
}

export function registerWorkers(program: Command, context: ContextFactory): void {
  program
    .command('expiry-worker')
    .description('run the expiry lane: expire due holds and write their email intents (any number may run)')
    .action(async () => runService(context({ service: true }), { expiry: true }));

  program
    .command('delivery-worker')
    .description('run the delivery lane: lease intents, take permits from the shared limiter, send, record (any number may run)')
    .action(async () => runService(context({ service: true }), { delivery: true }));

  program
    .command('start')
    .description('run leasehold: migrations, the HTTP API on PORT, both lanes and the retention policy (SIGTERM/SIGINT drains, a second signal forces)')
    .option('--host <address>', 'interface the API listens on (default LEASEHOLD_HOST, else 127.0.0.1)', hostArg)
    .action(async (options: { host?: string }) =>
      runService(context({ service: true }), { expiry: true, delivery: true, api: true, retention: true }, options.host ? { host: options.host } : {}),
    );

  program
    .command('api')
    .description('serve the HTTP API alone on PORT (migrations first; SIGTERM/SIGINT drains, a second signal forces)')
    .option('--host <address>', 'interface to listen on (default LEASEHOLD_HOST, else 127.0.0.1)', hostArg)
    .action(async (options: { host?: string }) => runService(context({ service: true }), { api: true }, options.host ? { host: options.host } : {}));
}
