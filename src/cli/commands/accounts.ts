import { InvalidArgumentError, type Command } from 'commander';
import { counts, iso } from '../../format.js';
import { ACCOUNT_NAME } from '../../model/accounts.js';
import type { AccountView } from '../../ops/operations.js';
import type { ContextFactory } from '../context.js';
import { withOperations } from '../operations.js';
import { burstArg, intentIdArg, perSecondArg, reasonArg, secondsArg } from './args.js';
import { describeLimitSource } from './limit-source.js';

/**
 * `leasehold accounts [pause|resume|rate-limit]` and `leasehold move`: the
 * provider accounts of LEASEHOLD_ACCOUNTS_FILE (or the one `default`),
 * through the same Operations the API's /v1/accounts uses. Intents are shown
 * by id only: never a recipient's address.
 */

/** The accounts file's own rule for a name, so a typo is a usage error (exit 2) before the database. */
export function accountNameArg(value: string): string {
  if (!ACCOUNT_NAME.test(value)) {
    throw new InvalidArgumentError('must be an account name: lowercase letters, digits, - and _ (at most 63), starting with a letter or digit');
  }
  return value;
}

const describePause = (a: AccountView): string =>
  a.pause.paused
    ? `yes: ${a.pause.reason ?? 'no reason'} (by ${a.pause.pausedBy ?? '?'}${a.pause.pausedUntil ? `, until ${iso(a.pause.pausedUntil)}` : ''})`
    : 'no';

/** Aligned columns under a header; the last column is not padded. */
export function columns(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}

export function formatAccounts(failover: string[], accounts: AccountView[]): string[] {
  const header = ['NAME', 'PROVIDER', 'FAILOVER', 'UNIT', 'RATE', 'TOKENS', 'PAUSED', 'COOLING DOWN UNTIL', 'BACKLOG', 'LAST MINUTE'];
  const rows = accounts.map((a) => [
    a.name,
    a.provider,
    a.failoverIndex === null ? '-' : String(a.failoverIndex + 1),
    a.unit,
    `${a.rate.perSecond}/s, burst ${a.rate.burst}`,
    a.rate.tokens.toFixed(1),
    describePause(a),
    a.coolingDown ? iso(a.cooldownUntil) : '-',
    String(a.backlog),
    counts(a.lastMinute),
  ]);
  return [`failover: ${failover.join(' -> ')}`, ...columns([header, ...rows])];
}

export function registerAccounts(program: Command, context: ContextFactory): void {
  const accounts = program
    .command('accounts')
    .description('the provider accounts: rate, permits, pause, cooldown, backlog and sends in the last minute of each')
    .option('--json', 'print the accounts as JSON (what GET /v1/accounts answers)')
    .action(async (options: { json?: boolean }) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const list = await ops.listAccounts();
        if (options.json) ctx.out(JSON.stringify({ failover: ops.accounts.failover, accounts: list }, null, 2));
        else for (const line of formatAccounts(ops.accounts.failover, list)) ctx.out(line);
      });
    });

  accounts
    .command('pause')
    .description("pause one account within a second: its intents fail over to the next account; the fleet's delivery goes on")
    .argument('<name>', 'the account', accountNameArg)
    .option('--reason <text>', 'why (shown by leasehold accounts, status and the dashboard)', reasonArg)
    .option('--for <seconds>', 'lift the pause by itself after this long', secondsArg)
    .action(async (name: string, options: { reason?: string; for?: number }) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const account = await ops.pauseAccount(name, {
          ...(options.reason !== undefined ? { reason: options.reason } : {}),
          ...(options.for !== undefined ? { forSeconds: options.for } : {}),
        });
        const { reason, pausedUntil } = account.pause;
        ctx.out(`account ${name} paused: ${reason ?? 'no reason'}${pausedUntil ? ` (until ${iso(pausedUntil)})` : ''}`);
      });
    });

  accounts
    .command('resume')
    .description("lift one account's pause (the fleet's own pause is `leasehold resume`)")
    .argument('<name>', 'the account', accountNameArg)
    .action(async (name: string) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const before = await ops.getAccount(name);
        await ops.resumeAccount(name);
        ctx.out(before.pause.paused ? `account ${name} resumed (was paused: ${before.pause.reason ?? 'no reason'})` : `account ${name} was not paused; it is running`);
      });
    });

  accounts
    .command('rate-limit')
    .description("show one account's limiter policy, or change it (other accounts keep theirs; all workers obey within a second)")
    .argument('<name>', 'the account', accountNameArg)
    .option('--per-second <n>', 'permits per second', perSecondArg)
    .option('--burst <n>', 'most permits at once', burstArg)
    .action(async (name: string, options: { perSecond?: number; burst?: number }) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        if (options.perSecond !== undefined || options.burst !== undefined) {
          const limiter = await ops.setRateLimit(
            {
              ...(options.perSecond !== undefined ? { perSecond: options.perSecond } : {}),
              ...(options.burst !== undefined ? { burst: options.burst } : {}),
            },
            name,
          );
          ctx.out(`rate limit of ${name} set: ${limiter.perSecond}/s, burst ${limiter.burst}`);
        } else {
          const limiter = await ops.rateLimit(name);
          ctx.out(`rate limit of ${name}: ${limiter.perSecond}/s, burst ${limiter.burst} (${limiter.tokens.toFixed(1)} permits available now); ${describeLimitSource(limiter)}`);
        }
      });
    });

  program
    .command('move')
    .description('send a pending intent through another account in failover (refused while it is being sent, or once finished)')
    .argument('<intentId>', 'e.g. reservation-expired:<holdId>', intentIdArg)
    .requiredOption('--to <account>', 'the account to send it through', accountNameArg)
    .action(async (intentId: string, options: { to: string }) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const intent = await ops.moveIntent(intentId, options.to);
        ctx.out(`intent ${intent.id} moved to ${options.to}: it is sent through it next`);
      });
    });
}
