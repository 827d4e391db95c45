import { InvalidArgumentError, type Command } from 'commander';
import { readFileSync } from 'node:fs';
import { iso } from '../../format.js';
import { AUDIT_ACTIONS, type AuditAction } from '../../model/audit-actions.js';
import { parseTokensFile, tokenHash, tokenProblem } from '../../model/api-tokens.js';
import { MAX_PAGE_LIMIT } from '../../model/cursor.js';
import type { AuditEntry } from '../../tables/audit-log.js';
import { CliExit, EXIT_USAGE, type ContextFactory } from '../context.js';

/**
 * `leasehold tokens hash|check` (the tokens file, LEASEHOLD_API_TOKENS_FILE:
 * it holds hashes only) and `leasehold audit` (who changed what, newest first).
 */

function sinceArg(value: string): Date {
  const at = /^\d{4}-\d{2}-\d{2}T/.test(value) ? new Date(value) : Number.NaN;
  if (!(at instanceof Date) || Number.isNaN(at.getTime())) throw new InvalidArgumentError('must be an ISO 8601 time, e.g. 2026-05-04T10:00:00Z');
  return at;
}

function actionArg(value: string): AuditAction {
  if (!(AUDIT_ACTIONS as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${AUDIT_ACTIONS.join(', ')}`);
  return value as AuditAction;
}

function limitArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_LIMIT) throw new InvalidArgumentError(`must be a whole number from 1 to ${MAX_PAGE_LIMIT}`);
  return n;
}

/** One line per entry: time, actor, action, target, and what changed, as JSON (never an address: none is stored). */
export function auditLine(entry: AuditEntry): string {
  const change = entry.before !== null || entry.after !== null ? ` ${JSON.stringify(entry.before)} -> ${JSON.stringify(entry.after)}` : '';
  const detail = entry.detail !== null ? ` ${JSON.stringify(entry.detail)}` : '';
  return `${iso(entry.at)}  ${entry.actor}  ${entry.action}${entry.target ? ` ${entry.target}` : ''}${change}${detail}${entry.requestId ? ` (request ${entry.requestId})` : ''}`;
}

export function registerAccess(program: Command, context: ContextFactory): void {
  const tokens = program.command('tokens').description('the API tokens file (LEASEHOLD_API_TOKENS_FILE): hash a token for it, check it');

  tokens
    .command('hash')
    .description("print the sha256 a tokens file stores for a token (read from stdin, so it stays out of shell history; or as the argument)")
    .argument('[token]', 'the token; left out: the first line of stdin')
    .action((given: string | undefined) => {
      const token = (given ?? readFileSync(0, 'utf8').split(/\r?\n/)[0] ?? '').trim();
      const problem = tokenProblem(token);
      if (problem) throw new CliExit(EXIT_USAGE, `leasehold: tokens hash: the token ${problem}`);
      process.stdout.write(`${tokenHash(token)}\n`);
    });

  tokens
    .command('check')
    .description('check a tokens file as the API would read it (at start and on SIGHUP), and list its tokens')
    .argument('<file>', 'the YAML file')
    .action((file: string) => {
      const out = (line: string) => process.stdout.write(`${line}\n`);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (error) {
        throw new CliExit(EXIT_USAGE, `leasehold: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      }
      const entries = parseTokensFile(text);
      for (const e of entries) {
        out(`${e.name}  ${e.role}${e.tenants ? `  tenants ${e.tenants.join(', ')}` : ''}${e.expiresAt ? `  expires ${iso(e.expiresAt)}${e.expiresAt.getTime() <= Date.now() ? ' (expired)' : ''}` : ''}`);
      }
      out(`${entries.length} token(s); LEASEHOLD_API_TOKEN, when set, is one more (env, admin)`);
    });

  program
    .command('audit')
    .description('the audit log, newest first: pauses, rate limits, replays, suppressions, erasures, retention runs, tenant policies, refused tokens')
    .option('--since <time>', 'only entries at or after this ISO 8601 time', sinceArg)
    .option('--action <action>', `only this action (${AUDIT_ACTIONS.join(', ')})`, actionArg)
    .option('--limit <n>', 'most entries (default 50)', limitArg)
    .option('--json', 'print the entries as JSON')
    .action(async (flags: { since?: Date; action?: AuditAction; limit?: number; json?: boolean }) => {
      const ctx = context();
      const { auditList } = await import('../../tables/audit-log.js');
      const db = await ctx.database({ poolSize: 2, migrations: 'require' });
      try {
        const page = await auditList(db.pool, db.schema, {
          limit: flags.limit ?? 50,
          ...(flags.since ? { since: flags.since } : {}),
          ...(flags.action ? { action: flags.action } : {}),
        });
        if (flags.json) return ctx.out(JSON.stringify(page, null, 2));
        if (page.entries.length === 0) return ctx.out('no audit entries');
        for (const entry of page.entries) ctx.out(auditLine(entry));
      } finally {
        await db.close();
      }
    });
}
