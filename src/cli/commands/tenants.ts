import type { TenantBacklog } from '../../tables/tenants.js';
import { InvalidArgumentError, type Command } from 'commander';
import { NotFoundError, ValidationError } from '../../errors.js';
import { iso, table } from '../../format.js';
import { isSender, SENDER_RULE } from '../../model/address.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../model/cursor.js';
import { validateTenant } from '../../model/hold-input.js';
import { MAX_WEIGHT, MIN_WEIGHT, WEIGHT_RULE, type TenantPolicy } from '../../model/tenant-policy.js';
import type { Operations } from '../../ops/operations.js';
import { CliExit, EXIT_FAILURE, EXIT_USAGE, type ContextFactory } from '../context.js';
import { withOperations } from '../operations.js';
import { accountNameArg, columns } from './accounts.js';
import { burstArg, perSecondArg } from './args.js';

/**
 * `leasehold tenants [show|set|delete]`: each tenant's policy (cap, weight,
 * account, sender), through the same Operations as /v1/tenants. The empty
 * tenant is `''` (`leasehold tenants show ''`). `set` replaces the policy as
 * a whole, as PUT does: a flag left out is not set.
 */

export function tenantArg(value: string): string {
  try {
    return validateTenant(value);
  } catch (error) {
    throw new InvalidArgumentError((error as ValidationError).message.replace(/^\w+: /, ''));
  }
}

function weightArg(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < MIN_WEIGHT || n > MAX_WEIGHT) throw new InvalidArgumentError(WEIGHT_RULE);
  return n;
}

function senderArg(value: string): string {
  if (!isSender(value)) throw new InvalidArgumentError(SENDER_RULE);
  return value;
}

function limitArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_LIMIT) throw new InvalidArgumentError(`must be a whole number from 1 to ${MAX_PAGE_LIMIT}`);
  return n;
}

/** The flag each policy field is set with, for errors found past the flags (an account not configured, burst without per-second). */
const FLAGS: Record<string, string> = { perSecond: '--per-second', burst: '--burst', weight: '--weight', account: '--account', from: '--from', replyTo: '--reply-to' };

const shown = (tenant: string): string => (tenant === '' ? "''" : tenant);
const cap = (p: TenantPolicy): string => (p.perSecond === null ? 'none' : `${p.perSecond}/s, burst ${p.burst}`);

export function formatTenantPolicies(policies: TenantPolicy[]): string[] {
  const header = ['TENANT', 'CAP', 'WEIGHT', 'ACCOUNT', 'FROM', 'REPLY-TO', 'UPDATED'];
  const rows = policies.map((p) => [shown(p.tenant), cap(p), String(p.weight), p.account ?? '-', p.from ?? '-', p.replyTo ?? '-', iso(p.updatedAt)]);
  return columns([header, ...rows]);
}

export function formatTenantPolicy(p: TenantPolicy): string[] {
  return [
    `tenant ${shown(p.tenant)}`,
    ...table([
      ['cap', cap(p)],
      ['weight', String(p.weight)],
      ['account', p.account ?? '- (failover as usual)'],
      ['from', p.from ?? "- (the templates')"],
      ['reply-to', p.replyTo ?? "- (the templates')"],
      ['created', iso(p.createdAt)],
      ['updated', iso(p.updatedAt)],
    ]),
  ];
}

interface SetOptions {
  perSecond?: number;
  burst?: number;
  weight?: number;
  account?: string;
  from?: string;
  replyTo?: string;
}

export function registerTenants(program: Command, context: ContextFactory): void {
  const tenants = program
    .command('tenants')
    .description('tenants: each one\'s policy (a cap, weight, account and sender) and the largest backlogs')
    .option('--limit <n>', `how many (1-${MAX_PAGE_LIMIT})`, limitArg, DEFAULT_PAGE_LIMIT)
    .option('--cursor <cursor>', 'continue after a previous page')
    .option('--top <n>', 'how many of the largest backlogs (1-1000)', limitArg, 10)
    .option('--json', 'print as JSON (what GET /v1/tenants answers)')
    .action(async (options: { limit: number; cursor?: string; top: number; json?: boolean }) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const page = await ops.tenants.policies({ limit: options.limit, ...(options.cursor ? { cursor: options.cursor } : {}) });
        const backlog = await ops.tenants.backlog(options.top);
        if (options.json) {
          ctx.out(JSON.stringify({ ...page, backlog }, null, 2));
          return;
        }
        for (const line of formatBacklog(backlog)) ctx.out(line);
        if (page.policies.length === 0) ctx.out('no tenant policies (every tenant shares its account with no cap)');
        else for (const line of formatTenantPolicies(page.policies)) ctx.out(line);
        if (page.nextCursor) ctx.out(`more: leasehold tenants --cursor ${page.nextCursor}`);
      });
    });

  tenants
    .command('show')
    .description("one tenant's policy")
    .argument('<tenant>', "the tenant ('' for the empty tenant)", tenantArg)
    .option('--json', 'print as JSON (what GET /v1/tenants/:tenant answers)')
    .action(async (tenant: string, _options: unknown, command: Command) => {
      const ctx = context();
      const { json } = command.optsWithGlobals<{ json?: boolean }>();
      await withOperations(ctx, async (ops) => {
        const policy = await ops.tenants.policy(tenant);
        if (!policy) throw new CliExit(EXIT_FAILURE, `leasehold: tenant ${shown(tenant)} has no policy (it shares its account with no cap)`);
        if (json) ctx.out(JSON.stringify(policy, null, 2));
        else for (const line of formatTenantPolicy(policy)) ctx.out(line);
      });
    });

  tenants
    .command('set')
    .description('set a tenant\'s policy as a whole (as PUT /v1/tenants/:tenant: a flag left out is not set)')
    .argument('<tenant>', "the tenant ('' for the empty tenant)", tenantArg)
    .option('--per-second <n>', "cap on the tenant's sends per second", perSecondArg)
    .option('--burst <n>', 'most sends at once under the cap (needs --per-second; default: it rounded up)', burstArg)
    .option('--weight <n>', `share of an account's permits against other tenants (${MIN_WEIGHT}-${MAX_WEIGHT}, default 1)`, weightArg)
    .option('--account <name>', 'send its email through this configured account', accountNameArg)
    .option('--from <sender>', "sender overriding the templates' (address or \"Name <address>\")", senderArg)
    .option('--reply-to <address>', "reply-to overriding the templates'", senderArg)
    .option('--json', 'print the stored policy as JSON')
    .action(async (tenant: string, options: SetOptions, command: Command) => {
      const ctx = context();
      const { json } = command.optsWithGlobals<{ json?: boolean }>();
      const policy = Object.fromEntries(Object.entries(options).filter(([key, value]) => key in FLAGS && value !== undefined));
      await withOperations(ctx, async (ops) => {
        let result: Awaited<ReturnType<Operations['tenants']['setPolicy']>>;
        try {
          result = await ops.tenants.setPolicy(tenant, policy);
        } catch (error) {
          if (error instanceof ValidationError) {
            throw new CliExit(EXIT_USAGE, `leasehold tenants set: ${FLAGS[error.field] ?? error.field}: ${error.message.replace(/^[\w.]+: /, '').replace(/\bperSecond\b/g, '--per-second')}`);
          }
          throw error;
        }
        if (json) {
          ctx.out(JSON.stringify(result.policy, null, 2));
          return;
        }
        ctx.out(`tenant ${shown(tenant)}: policy ${result.created ? 'created' : 'replaced'}`);
        for (const line of formatTenantPolicy(result.policy).slice(1)) ctx.out(line);
      });
    });

  tenants
    .command('pause')
    .description('pause one tenant: its email waits (pending), every other tenant goes on')
    .argument('<tenant>', "the tenant ('' for the empty tenant)", tenantArg)
    .option('--reason <text>', 'why (shown by leasehold tenants)')
    .action(async (tenant: string, options: { reason?: string }) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const pause = await ops.tenants.pause(tenant, ...(options.reason !== undefined ? [options.reason] : []));
        ctx.out(`tenant ${shown(tenant)}: paused (${pause.reason})`);
      });
    });

  tenants
    .command('resume')
    .description('resume one tenant')
    .argument('<tenant>', "the tenant ('' for the empty tenant)", tenantArg)
    .action(async (tenant: string) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        try {
          await ops.tenants.resume(tenant);
        } catch (error) {
          if (error instanceof NotFoundError) throw new CliExit(EXIT_FAILURE, `leasehold: tenant ${shown(tenant)} is not paused`);
          throw error;
        }
        ctx.out(`tenant ${shown(tenant)}: resumed`);
      });
    });

  tenants
    .command('delete')
    .description("remove a tenant's policy (it then shares its account with no cap)")
    .argument('<tenant>', "the tenant ('' for the empty tenant)", tenantArg)
    .action(async (tenant: string) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        try {
          await ops.tenants.deletePolicy(tenant);
        } catch (error) {
          if (error instanceof NotFoundError) throw new CliExit(EXIT_FAILURE, `leasehold: tenant ${shown(tenant)} has no policy`);
          throw error;
        }
        ctx.out(`tenant ${shown(tenant)}: policy deleted (it shares its account with no cap)`);
      });
    });
}

/** The largest backlogs, as a table (nothing when no tenant has email waiting). */
export function formatBacklog(backlog: TenantBacklog[]): string[] {
  if (backlog.length === 0) return [];
  const rows = backlog.map((b) => [
    shown(b.tenant),
    String(b.backlog),
    `${Math.round(b.oldestAgeSeconds)}s`,
    String(b.sentLastMinute),
    b.paused ? `paused: ${b.pauseReason ?? ''}` : '',
  ]);
  return ['largest backlogs:', ...columns([['tenant', 'backlog', 'oldest', 'sent/min', ''], ...rows]).map((l) => `  ${l}`), ''];
}
