import type { Command } from 'commander';
import { iso } from '../../format.js';
import type { ContextFactory } from '../context.js';
import { withOperations } from '../operations.js';
import { burstArg, intentIdArg, perSecondArg, reasonArg, secondsArg } from './args.js';
import { describeLimitSource } from './limit-source.js';

/** Operator controls: pause, resume, replay, rate-limit, through the same Operations the API uses. */

export function registerOps(program: Command, context: ContextFactory): void {
  program
    .command('pause')
    .description('pause delivery fleet-wide within a second; intents stay pending and expiry goes on')
    .option('--reason <text>', 'why (shown by status, /healthz and the dashboard)', reasonArg)
    .option('--for <seconds>', 'lift the pause by itself after this long', secondsArg)
    .action(async (options: { reason?: string; for?: number }) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const control = await ops.pause({
          ...(options.reason !== undefined ? { reason: options.reason } : {}),
          ...(options.for !== undefined ? { forSeconds: options.for } : {}),
        });
        ctx.out(`delivery paused: ${control.reason}${control.pausedUntil ? ` (until ${iso(control.pausedUntil)})` : ''}`);
      });
    });

  program
    .command('resume')
    .description('resume delivery; the backlog drains at the configured rate, without a burst beyond it')
    .action(async () => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const { before, accounts } = await ops.resume();
        const also = accounts.length > 0 ? `; accounts resumed: ${accounts.join(', ')}` : '';
        if (before.paused) ctx.out(`delivery resumed (was paused: ${before.reason ?? 'no reason'})${also}`);
        else ctx.out(accounts.length > 0 ? `delivery resumed${also}` : 'delivery was not paused; it is running');
      });
    });

  program
    .command('replay')
    .description('send a finished intent (sent, rejected or dead) again without touching its hold')
    .argument('<intentId>', 'e.g. reservation-expired:<holdId>', intentIdArg)
    .action(async (intentId: string) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const intent = await ops.replay(intentId);
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
      await withOperations(ctx, async (ops) => {
        if (options.perSecond !== undefined || options.burst !== undefined) {
          const limiter = await ops.setRateLimit({
            ...(options.perSecond !== undefined ? { perSecond: options.perSecond } : {}),
            ...(options.burst !== undefined ? { burst: options.burst } : {}),
          });
          ctx.out(`rate limit set: ${limiter.perSecond}/s, burst ${limiter.burst}`);
        } else {
          const limiter = await ops.rateLimit();
          ctx.out(`rate limit: ${limiter.perSecond}/s, burst ${limiter.burst} (${limiter.tokens.toFixed(1)} permits available now); ${describeLimitSource(limiter)}`);
        }
      });
    });
}
