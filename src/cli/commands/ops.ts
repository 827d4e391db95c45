import type { Command } from 'commander';
import { deliveryControlGet, deliveryPause, deliveryResume, rateLimiterEnsure, rateLimiterGet, rateLimiterSet } from '../../tables/delivery-control.js';
import { replayIntent } from '../../tables/outbox-replay.js';
import type { ContextFactory } from '../main.js';
import type { CommandContext } from '../context.js';
import type { Database } from '../../db/database.js';
import { burstArg, intentIdArg, perSecondArg, reasonArg, secondsArg } from './args.js';
import { iso } from '../../format.js';

/** Operator controls: pause, resume, replay, rate-limit. Each logs the one event of its transition. */

async function withDatabase(ctx: CommandContext, work: (db: Database) => Promise<void>): Promise<void> {
  // These act on a running fleet's rows: a mistyped schema must fail, not
  // get migrated into an empty one that a pause or rate change then lands in.
  const db = await ctx.database({ poolSize: 2, migrations: 'require' });
  try {
    await work(db);
  } finally {
    await db.close();
  }
}

export function registerOps(program: Command, context: ContextFactory): void {
  program
    .command('pause')
    .description('pause delivery fleet-wide within a second; intents stay pending and expiry goes on')
    .option('--reason <text>', 'why (shown by status, /healthz and the dashboard)', reasonArg)
    .option('--for <seconds>', 'lift the pause by itself after this long', secondsArg)
    .action(async (options: { reason?: string; for?: number }) => {
      const ctx = context();
      await withDatabase(ctx, async (db) => {
        const reason = options.reason ?? 'paused by an operator';
        const control = await deliveryPause(db.pool, db.schema, {
          reason,
          by: 'operator',
          ...(options.for !== undefined ? { untilMs: options.for * 1000 } : {}),
        });
        ctx.logger.info({ event: 'delivery.paused', reason, by: 'operator' }, 'delivery paused');
        ctx.out(`delivery paused: ${control.reason}${control.pausedUntil ? ` (until ${iso(control.pausedUntil)})` : ''}`);
      });
    });

  program
    .command('resume')
    .description('resume delivery; the backlog drains at the configured rate, without a burst beyond it')
    .action(async () => {
      const ctx = context();
      await withDatabase(ctx, async (db) => {
        const before = await deliveryControlGet(db.pool, db.schema);
        await deliveryResume(db.pool, db.schema);
        ctx.logger.info({ event: 'delivery.resumed', by: 'operator' }, 'delivery resumed');
        ctx.out(before.paused ? `delivery resumed (was paused: ${before.reason ?? 'no reason'})` : 'delivery was not paused; it is running');
      });
    });

  program
    .command('replay')
    .description('send a finished intent (sent, rejected or dead) again without touching its hold')
    .argument('<intentId>', 'e.g. reservation-expired:<holdId>', intentIdArg)
    .action(async (intentId: string) => {
      const ctx = context();
      await withDatabase(ctx, async (db) => {
        const intent = await replayIntent(db.pool, intentId, { schema: db.schema });
        ctx.logger.info({ event: 'intent.replayed', intentId: intent.id, holdId: intent.holdId, replays: intent.replays }, 'intent replayed');
        ctx.out(`intent ${intent.id} is pending again (replay ${intent.replays}); its message will be rendered again from the current templates`);
      });
    });

  program
    .command('rate-limit')
    .description('show the shared limiter policy, or change it (all workers obey within a second)')
    .option('--per-second <n>', 'permits per second', perSecondArg)
    .option('--burst <n>', 'most permits at once', burstArg)
    .action(async (options: { perSecond?: number; burst?: number }) => {
      const ctx = context();
      await withDatabase(ctx, async (db) => {
        const { config } = ctx;
        await rateLimiterEnsure(db.pool, db.schema, { perSecond: config.ratePerSecond, burst: config.rateBurst });
        let limiter = (await rateLimiterGet(db.pool, db.schema))!;
        if (options.perSecond !== undefined || options.burst !== undefined) {
          // Either flag alone keeps the other half of the current policy.
          const policy = { perSecond: options.perSecond ?? limiter.perSecond, burst: options.burst ?? limiter.burst };
          limiter = await rateLimiterSet(db.pool, db.schema, policy);
          ctx.logger.info({ event: 'rate_limit.changed', ...policy }, 'rate limit changed');
          ctx.out(`rate limit set: ${limiter.perSecond}/s, burst ${limiter.burst}`);
        } else {
          ctx.out(`rate limit: ${limiter.perSecond}/s, burst ${limiter.burst} (${limiter.tokens.toFixed(1)} permits available now)`);
        }
      });
    });
}
