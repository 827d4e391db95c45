import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { rateLimiterEnsure } from '../../tables/rate-limiter.js';
import { webhookSettingsFromEnv } from '../../events/webhook-config.js';
import { createMetrics } from '../../observability/metrics.js';
import { onShutdownSignals } from '../../runtime/shutdown.js';
import { startApiServer } from '../../server/app.js';
import type { ContextFactory } from '../context.js';
import { hostArg } from './args.js';

/** LEASEHOLD_API_TOKEN, or a fresh random one (the caller prints it once). */
export function resolveApiToken(configured: string | undefined): { token: string; generated: boolean } {
  if (configured) return { token: configured, generated: false };
  return { token: randomBytes(24).toString('base64url'), generated: true };
}

export function registerApi(program: Command, context: ContextFactory): void {
  program
    .command('api')
    .description('serve the HTTP API alone on PORT (migrations first; SIGTERM/SIGINT drains, a second signal forces)')
    .option('--host <address>', 'interface to listen on (default LEASEHOLD_HOST, else 127.0.0.1)', hostArg)
    .action(async (options: { host?: string }) => {
      const ctx = context();
      const { config, logger } = ctx;
      const webhooks = webhookSettingsFromEnv(config.env);
      const db = await ctx.database({ poolSize: 10, migrations: 'apply' });
      try {
        await rateLimiterEnsure(db.pool, db.schema, { perSecond: config.ratePerSecond, burst: config.rateBurst });
        const { token, generated } = resolveApiToken(config.apiToken);
        const server = await startApiServer({
          pool: db.pool,
          schema: db.schema,
          config,
          logger,
          metrics: createMetrics(),
          apiToken: token,
          webhooks,
          port: config.port,
          host: options.host ?? config.host,
        });
        await new Promise<void>((resolve) => {
          onShutdownSignals(
            async () => {
              await server.close();
              await db.close();
            },
            logger,
            // Forced (second signal or timeout): leave now, whatever is still open.
            { exit: (code) => (code === 0 ? resolve() : process.exit(code)) },
          );
          // Announced only now: a supervisor that sends SIGTERM as soon as it
          // reads this line must get a drain, not the default signal death.
          if (generated) ctx.out(`API token (generated for this run; set LEASEHOLD_API_TOKEN to keep one): ${token}`);
          ctx.out(`leasehold API listening on ${server.url}`);
          logger.info({ event: 'api.started', url: server.url }, 'API listening');
        });
      } catch (error) {
        await db.close();
        throw error;
      }
    });
}
