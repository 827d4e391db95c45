import { InvalidArgumentError, type Command } from 'commander';
import type { ValidationError } from '../../errors.js';
import { suppressionKey, validateAddress } from '../../model/address.js';
import { SuppressionReason, type Suppression } from '../../model/suppression-reasons.js';
import type { ContextFactory } from '../context.js';
import { CliExit, EXIT_FAILURE, type CommandContext } from '../context.js';
import { withOperations } from '../operations.js';
import { iso } from '../../format.js';

/**
 * `leasehold suppressions list|add|remove`: the addresses the delivery lane
 * never sends to. Output shows addresses (an operator asked for them); logs
 * carry only the reason.
 */

const usage = <T>(parse: () => T): T => {
  try {
    return parse();
  } catch (error) {
    throw new InvalidArgumentError((error as ValidationError).message.replace(/^\w+: /, ''));
  }
};

const addressArg = (value: string) => usage(() => validateAddress(value));
const keyArg = (value: string) => usage(() => suppressionKey(value));

function limitArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 500) throw new InvalidArgumentError('must be a whole number from 1 to 500');
  return n;
}

function reasonArg(value: string): SuppressionReason {
  const reasons = Object.values(SuppressionReason) as string[];
  if (!reasons.includes(value)) throw new InvalidArgumentError(`must be one of ${reasons.join(', ')}`);
  return value as SuppressionReason;
}

function detailArg(value: string): string {
  const detail = value.trim();
  if (detail.length === 0 || detail.length > 500 || /[\u0000-\u001f\u007f]/.test(detail)) {
    throw new InvalidArgumentError('must be 1-500 printable characters');
  }
  return detail;
}

/** One line per suppression; an erased address shows as its hash. */
export function formatSuppression(s: Suppression): string {
  const who = s.address ?? `<erased> sha256:${s.addressHash}`;
  const why = [s.reason, s.provider ? `via ${s.provider}` : '', s.detail ?? ''].filter(Boolean).join('  ');
  return `${iso(s.createdAt)}  ${who}  ${why}`;
}

async function withDatabase(ctx: CommandContext, work: (pool: import('pg').Pool, schema: string) => Promise<void>): Promise<void> {
  const db = await ctx.database({ poolSize: 2, migrations: 'require' });
  try {
    await work(db.pool, db.schema);
  } finally {
    await db.close();
  }
}

export function registerSuppressions(program: Command, context: ContextFactory): void {
  const suppressions = program
    .command('suppressions')
    .description('the suppression list: addresses never sent to again (hard bounces, complaints, added by hand)');

  suppressions
    .command('list')
    .description('list suppressions, newest first')
    .option('--reason <reason>', 'only hard_bounce, complaint or manual', reasonArg)
    .option('--limit <n>', 'how many (1-500)', limitArg, 50)
    .option('--cursor <cursor>', 'continue after a previous page')
    .option('--json', 'print the page as JSON')
    .action(async (options: { reason?: SuppressionReason; limit: number; cursor?: string; json?: boolean }) => {
      const ctx = context();
      const { suppressionsList } = await import('../../tables/suppressions.js');
      await withDatabase(ctx, async (pool, schema) => {
        const page = await suppressionsList(pool, schema, {
          limit: options.limit,
          ...(options.reason ? { reason: options.reason } : {}),
          ...(options.cursor ? { cursor: options.cursor } : {}),
        });
        if (options.json) {
          ctx.out(JSON.stringify(page, null, 2));
          return;
        }
        if (page.suppressions.length === 0) ctx.out('no suppressions');
        for (const s of page.suppressions) ctx.out(formatSuppression(s));
        if (page.nextCursor) ctx.out(`more: leasehold suppressions list --cursor ${page.nextCursor}`);
      });
    });

  suppressions
    .command('add')
    .description('suppress an address by hand (the delivery lane rejects its emails without calling the provider)')
    .argument('<address>', 'the email address', addressArg)
    .option('--detail <text>', 'why, for the next operator', detailArg)
    .action(async (address: string, options: { detail?: string }) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const { suppression, created } = await ops.addSuppression(address, options.detail ?? null);
        ctx.out(created ? `suppressed: ${formatSuppression(suppression)}` : `already suppressed: ${formatSuppression(suppression)}`);
      });
    });

  suppressions
    .command('remove')
    .description('lift a suppression: future emails to the address are sent again')
    .argument('<address>', 'the email address, or its sha256 hex (all that is left after erasure)', keyArg)
    .action(async (hash: string, _options: unknown, command: Command) => {
      const ctx = context();
      const given = String(command.args[0] ?? hash);
      await withOperations(ctx, async (ops) => {
        const removed = await ops.removeSuppression(hash);
        if (!removed) throw new CliExit(EXIT_FAILURE, `leasehold: ${given} is not suppressed`);
        ctx.out(`no longer suppressed: ${removed.address ?? `sha256:${removed.addressHash}`} (was ${removed.reason} since ${iso(removed.createdAt)})`);
      });
    });
}
