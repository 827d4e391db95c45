import { InvalidArgumentError, type Command } from 'commander';
import type { ValidationError } from '../../errors.js';
import type { TenantErasure } from '../../retention/erase.js';
import { validateTenant } from '../../model/hold-input.js';
import { storyTables, validateErasureAddress } from '../../retention/policy.js';
import { checkEraseWithinRetention, describePolicy, MAX_PRUNE_BATCH, parseErasePiiAfterDays, parseRetentionDays, type RetentionPolicy } from '../../model/retention-policy.js';
import type { TableCounts } from '../../retention/sql.js';
import type { ContextFactory } from '../context.js';
import { CliExit, cliActor, EXIT_USAGE } from '../context.js';
import { AuditAction } from '../../model/audit-actions.js';
import { table } from '../../format.js';

/** `prune` and `erase`: the retention policy by hand (the prune worker in `start` runs it continuously). */

function usage<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw new InvalidArgumentError((error as ValidationError).message.replace(/^\w+: /, ''));
  }
}

// `off` stays the string 'off' here: commander turns a parser's null into ''.
type DaysFlag = number | 'off';
const retentionDaysArg = (value: string): DaysFlag => usage(() => parseRetentionDays(value)) ?? 'off';
const eraseDaysArg = (value: string): DaysFlag => usage(() => parseErasePiiAfterDays(value)) ?? 'off';
const days = (flag: DaysFlag) => (flag === 'off' ? null : flag);
const emailArg = (value: string) => usage(() => validateErasureAddress(value));
const tenantArg = (value: string) => usage(() => validateTenant(value));
function batchArg(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 1 || n > MAX_PRUNE_BATCH) {
    throw new InvalidArgumentError(`must be a whole number from 1 to ${MAX_PRUNE_BATCH}`);
  }
  return n;
}

/** Story tables first (in deletion order), then any others. */
function tableLines(columns: Array<[string, TableCounts]>): string[] {
  const names = [...new Set([...storyTables(), ...columns.flatMap(([, c]) => Object.keys(c))])];
  return table(names.map((name) => [name, columns.map(([label, c]) => `${label} ${c[name] ?? 0}`).join(', ')]));
}

interface PruneFlags {
  dryRun?: boolean;
  retentionDays?: DaysFlag;
  erasePiiAfterDays?: DaysFlag;
  batch?: number;
  json?: boolean;
}

export function registerRetention(program: Command, context: ContextFactory): void {
  program
    .command('prune')
    .description('apply the retention policy now: delete finished stories past LEASEHOLD_RETENTION_DAYS, erase personal data past LEASEHOLD_ERASE_PII_AFTER_DAYS')
    .option('--dry-run', 'count what would be deleted and erased, per table, and change nothing')
    .option('--retention-days <days>', 'override LEASEHOLD_RETENTION_DAYS for this run (whole days, or off)', retentionDaysArg)
    .option('--erase-pii-after-days <days>', 'override LEASEHOLD_ERASE_PII_AFTER_DAYS for this run (whole days, or off)', eraseDaysArg)
    .option('--batch <n>', 'stories per transaction (default LEASEHOLD_PRUNE_BATCH)', batchArg)
    .option('--json', 'print the result as JSON')
    .action(async (flags: PruneFlags) => {
      const ctx = context();
      const policy: RetentionPolicy = {
        ...ctx.config.retention,
        ...(flags.retentionDays !== undefined ? { retentionDays: days(flags.retentionDays) } : {}),
        ...(flags.erasePiiAfterDays !== undefined ? { erasePiiAfterDays: days(flags.erasePiiAfterDays) } : {}),
        ...(flags.batch !== undefined ? { batchSize: flags.batch } : {}),
      };
      try {
        checkEraseWithinRetention(policy, '--erase-pii-after-days');
      } catch (error) {
        throw new CliExit(EXIT_USAGE, `leasehold: ${(error as ValidationError).message}`);
      }
      const db = await ctx.database({ poolSize: 2, migrations: 'require' });
      try {
        if (flags.dryRun) {
          const { retentionPreview } = await import('../../retention/preview.js');
          const preview = await retentionPreview(db.pool, db.schema, { now: null, ...policy });
          if (flags.json) return ctx.out(JSON.stringify({ dryRun: true, policy, ...preview }, null, 2));
          ctx.out(`dry run (nothing changed): ${describePolicy(policy)}`);
          for (const line of tableLines([['would delete', preview.prune], ['would erase', preview.erase]])) ctx.out(line);
          if (preview.keptPendingStories > 0) {
            ctx.out(`kept: ${preview.keptPendingStories} stories past the retention whose email is pending or finished recently`);
          }
          return;
        }
        const [{ Pruner }, { auditInsert }] = await Promise.all([import('../../retention/prune.js'), import('../../tables/audit-log.js')]);
        const run = await new Pruner({ pool: db.pool, schema: db.schema, policy, logger: ctx.logger }).runUntilDone();
        // Many short transactions: the run's entry, with its totals, is written once it ends.
        await auditInsert(db.pool, db.schema, cliActor(), {
          action: AuditAction.retentionRun,
          target: 'prune',
          detail: { pruned: run.pruned, erased: run.erased, rounds: run.rounds, complete: run.complete },
        });
        if (flags.json) return ctx.out(JSON.stringify({ dryRun: false, policy, ...run }, null, 2));
        ctx.out(`pruned: ${describePolicy(policy)}`);
        for (const line of tableLines([['deleted', run.pruned], ['erased', run.erased]])) ctx.out(line);
      } finally {
        await db.close();
      }
    });

  program
    .command('erase')
    .description("a deletion request: erase an address everywhere it is stored (--email), or every story of a tenant (--tenant), and report what changed")
    .option('--email <address>', 'the address to erase (trimmed, compared case-insensitively)', emailArg)
    .option('--tenant <tenant>', "a tenant leaving: erase the personal data of every one of its stories, whatever their age ('' for the empty tenant; its policy stays)", tenantArg)
    .option('--json', 'print the report as JSON')
    .action(async (flags: { email?: string; tenant?: string; json?: boolean }) => {
      const ctx = context();
      if (flags.email !== undefined && flags.tenant !== undefined) {
        throw new CliExit(EXIT_USAGE, 'leasehold: erase: --tenant cannot be used with --email; give one of them');
      }
      if (flags.email === undefined && flags.tenant === undefined) {
        throw new CliExit(EXIT_USAGE, 'leasehold: erase: give --email <address> or --tenant <tenant>');
      }
      const { eraseAddress, eraseTenant } = await import('../../retention/erase.js');
      const db = await ctx.database({ poolSize: 2, migrations: 'require' });
      if (flags.tenant !== undefined) {
        try {
          const report = await eraseTenant(db.pool, flags.tenant, { schema: db.schema, logger: ctx.logger, batchSize: ctx.config.retention.batchSize, actor: cliActor() });
          if (flags.json) return ctx.out(JSON.stringify(report, null, 2));
          for (const line of tenantLines(flags.tenant, report)) ctx.out(line);
        } finally {
          await db.close();
        }
        return;
      }
      const email = flags.email!;
      try {
        const report = await eraseAddress(db.pool, email, { schema: db.schema, logger: ctx.logger, actor: cliActor() });
        if (flags.json) return ctx.out(JSON.stringify(report, null, 2));
        const changed = Object.values(report.counts).reduce((a, b) => a + b, 0);
        ctx.out(changed === 0 ? 'nothing stored for this address was left to erase' : 'erased:');
        if (changed > 0) for (const line of tableLines([['rows changed', report.counts]])) ctx.out(line);
        if (report.rejectedPending > 0) {
          ctx.out(`${report.rejectedPending} pending email(s) rejected ("erased on request"): they will not be sent`);
        }
        if (report.inFlight > 0) ctx.out(`${report.inFlight} of them were being sent at that moment and may still arrive`);
        if (report.heldHoldIds.length > 0) {
          ctx.out(
            `${report.heldHoldIds.length} held hold(s) kept, they are live reservations: ${report.heldHoldIds.join(', ')}` +
              ' (cancel them or let them end, then run erase again)',
          );
        }
      } finally {
        await db.close();
      }
    });
}

/** The tenant erasure report in words: counts only, never an address. */
function tenantLines(tenant: string, report: TenantErasure): string[] {
  const name = tenant === '' ? "the empty tenant ''" : `tenant ${tenant}`;
  const lines = [
    report.stories === 0
      ? `nothing stored for ${name} was left to erase`
      : `erased ${report.stories} stories of ${name} in ${report.batches} batch(es):`,
  ];
  if (report.stories > 0) lines.push(...tableLines([['rows changed', report.counts]]));
  if (report.rejectedPending > 0) lines.push(`${report.rejectedPending} pending email(s) rejected ("erased on request"): they will not be sent`);
  if (report.inFlight > 0) lines.push(`${report.inFlight} of them were being sent at that moment and may still arrive`);
  if (report.heldHolds > 0) {
    const more = report.heldHolds > report.heldHoldIds.length ? ` and ${report.heldHolds - report.heldHoldIds.length} more` : '';
    lines.push(
      `${report.heldHolds} held hold(s) kept, they are live reservations: ${report.heldHoldIds.join(', ')}${more}` +
        ' (cancel them or let them end, then run erase again)',
    );
  }
  lines.push("the tenant's policy (tenant_policies), if it has one, is configuration and stays: `leasehold tenants delete` removes it");
  return lines;
}
