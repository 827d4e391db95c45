import type { Command } from 'commander';
import type { StatusReport } from '../../read/status.js';
import { describeLimitSource } from './limit-source.js';
import { formatBacklog } from './tenants.js';
import { CliExit, EXIT_FAILURE, type ContextFactory } from '../context.js';
import { counts, iso, seconds, table } from '../../format.js';

const against = (age: number, promise: number) =>
  `${seconds(age)}  (promise ${seconds(promise)}: ${age <= promise ? 'kept' : 'BROKEN'})`;

export function formatStatus(r: StatusReport): string[] {
  const { expiry, delivery, control, limiter, accounts } = r.stats;
  const first = limiter?.pause;
  const paused = control.paused
    ? `PAUSED: ${control.reason ?? 'no reason'} (by ${control.pausedBy ?? '?'} since ${iso(control.pausedAt)}${control.pausedUntil ? `, until ${iso(control.pausedUntil)}` : ''})`
    : accounts.failover.length === 1 && first?.paused
      ? `PAUSED: ${first.reason ?? 'no reason'} (account ${accounts.failover[0]}, by ${first.pausedBy ?? '?'} since ${iso(first.pausedAt)}${first.pausedUntil ? `, until ${iso(first.pausedUntil)}` : ''})`
      : accounts.paused.length > 0
        ? `running; accounts paused: ${accounts.paused.join(', ')} (\`leasehold accounts\`)`
        : 'running';
  return [
    'expiry lane',
    ...table([
      ['due holds', String(expiry.dueHolds)],
      ['oldest due hold age', against(expiry.oldestDueAgeSeconds, r.promises.expiryPromiseS)],
      // Only when there are any: held because the application's LEASEHOLD_EXPIRE_HOOK fails for them.
      ...(expiry.hookFailing > 0
        ? [['expiry hook failing', `${expiry.hookFailing} held (${r.hookFailures.slice(0, 5).map((f) => `${f.holdId}: ${f.error}`).join('; ')}${expiry.hookFailing > 5 ? '; ...' : ''})`] as [string, string]]
        : []),
    ]),
    'delivery lane',
    ...table([
      ['delivery', paused],
      ['backlog (pending)', String(delivery.backlog)],
      ['oldest pending age', against(delivery.oldestPendingAgeSeconds, r.promises.emailPromiseS)],
      ['intents by state', counts(delivery.intentsByState)],
      ['sends, last minute', counts(r.sendsLastMinute)],
      ['sends, last hour', counts(r.sendsLastHour)],
      [
        accounts.failover.length === 1 ? 'rate limit' : `rate limit (${accounts.failover[0]})`,
        limiter
          ? `${limiter.perSecond}/s, burst ${limiter.burst} (${limiter.tokens.toFixed(1)} permits now${limiter.cooldownUntil && limiter.cooldownUntil > new Date() ? `, provider cooldown until ${iso(limiter.cooldownUntil)}` : ''}); ${describeLimitSource(limiter)}`
          : 'not set yet (the first worker or API start writes the configured policy)',
      ],
    ]),
    `overall: ${r.health === 'ok' ? 'ok' : r.health === 'degraded' ? 'degraded (an account is paused; the others carry its intents)' : 'NOT OK'}`,
  ];
}

export function registerStatus(program: Command, context: ContextFactory): void {
  program
    .command('status')
    .description('both lanes at a glance: queue sizes, oldest ages against their promises, sends by outcome, limiter, pause')
    .option('--json', 'print the numbers as JSON')
    .addHelpText('after', '\nExit codes: 0 ok or degraded (as /healthz answers 200), 1 not ok (as /healthz answers 503) or the database cannot be read, 2 usage or configuration.')
    .action(async (options: { json?: boolean }) => {
      const ctx = context();
      const [{ readStatus }, { tenantsBacklog }, { accountsFromConfig }] = await Promise.all([
        import('../../read/status.js'),
        import('../../tables/tenants.js'),
        import('../../providers/registry.js'),
      ]);
      const db = await ctx.database({ poolSize: 4, migrations: 'require' });
      let report: StatusReport;
      try {
        report = await readStatus(db.pool, db.schema, ctx.config, accountsFromConfig(ctx.config).failover);
        // The tenants with the largest backlogs (GET /v1/tenants and `leasehold tenants` list more).
        const tenants = await tenantsBacklog(db.pool, db.schema, 5);
        if (options.json) ctx.out(JSON.stringify({ ...report, tenants }, null, 2));
        else {
          for (const line of formatStatus(report)) ctx.out(line);
          // Only when there is more than the one empty tenant to tell apart.
          if (tenants.some((t) => t.tenant !== '')) for (const line of formatBacklog(tenants)) ctx.out(line);
        }
      } finally {
        await db.close();
      }
      // A script or health check reads the exit code, not the last line: not ok is a failure, as /healthz's 503.
      if (!report.healthy) throw new CliExit(EXIT_FAILURE, 'leasehold: status: overall NOT OK');
    });
}
