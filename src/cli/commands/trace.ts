import type { Command } from 'commander';
import { holdTimeline, type HoldTimeline } from '../../read/timeline.js';
import type { ContextFactory } from '../context.js';
import { holdIdArg } from './args.js';
import { iso, seconds, table } from '../../format.js';

const delta = (from: Date | null, to: Date | null) =>
  from && to ? `+${seconds(Math.max(0, (to.getTime() - from.getTime()) / 1000))}` : '';

const outcomeWords = (e: { kind: string; bounceType: string | null }) => (e.bounceType ? `${e.kind} (${e.bounceType})` : e.kind);

/** The five moments, every attempt and every provider event, as lines an operator reads top to bottom. */
export function formatTimeline(t: HoldTimeline): string[] {
  const { hold, intent, moments: m } = t;
  const lines = [`hold ${hold.id}: ${hold.status}`];
  lines.push(
    ...table([
      // The empty tenant (every hold created without one) says nothing worth a line.
      ...(hold.tenant ? [['tenant', hold.tenant] as [string, string]] : []),
      ['created', iso(hold.createdAt)],
      ['1. became eligible', `${iso(m.eligibleAt)}  (expiresAt)`],
      ['2. was expired', `${iso(m.expiredAt)}  ${delta(m.eligibleAt, m.expiredAt)}${m.expiredAt ? ' after eligible' : ''}`],
      ['3. email available', `${iso(m.emailAvailableAt)}  ${delta(m.expiredAt, m.emailAvailableAt)}${m.emailAvailableAt ? ' after expiry' : ''}`],
      ['4. email accepted', `${iso(m.emailAcceptedAt)}  ${delta(m.emailAvailableAt, m.emailAcceptedAt)}${m.emailAcceptedAt ? ' after available' : ''}`],
      [`5. email ${t.outcome ? outcomeWords(t.outcome) : 'outcome'}`, t.outcome ? `${iso(m.emailOutcomeAt)}  ${delta(m.emailAcceptedAt, m.emailOutcomeAt)} after accepted (${t.outcome.provider})` : '-  (no provider event yet)'],
    ]),
  );
  if (hold.confirmedAt) lines.push(`  confirmed at ${iso(hold.confirmedAt)} (no email)`);
  if (hold.cancelledAt) lines.push(`  cancelled at ${iso(hold.cancelledAt)} (no email)`);
  if (hold.erasedAt) lines.push(`  personal data erased at ${iso(hold.erasedAt)}`);
  if (!intent) {
    lines.push('no email intent' + (hold.status === 'held' ? ' yet (the hold is still held)' : ''));
    return lines;
  }
  const flags = [
    intent.leased ? `leased until ${iso(intent.leaseExpiresAt)}` : '',
    intent.state === 'pending' ? `next attempt at ${iso(intent.availableAt)}` : '',
    intent.replays > 0 ? `replayed ${intent.replays}x` : '',
    intent.possibleDuplicate ? 'POSSIBLE DUPLICATE' : '',
    intent.receipt ? `receipt ${intent.receipt}` : '',
    intent.sentAccount ? `sent by account ${intent.sentAccount}` : '',
    intent.state === 'pending' && intent.pinnedAccount ? `held to account ${intent.pinnedAccount} (an unknown outcome there)` : '',
    intent.lastError ? `last error: ${intent.lastError}` : '',
  ].filter(Boolean);
  lines.push(`intent ${intent.id}: ${intent.state}, ${intent.attempts} attempt(s)${flags.length ? '; ' + flags.join('; ') : ''}`);
  const sent = t.message;
  lines.push(
    sent
      ? `  subject ${JSON.stringify(sent.subject)}  (${sent.template}/${sent.templateLocale}, ${sent.locale}, ${sent.timeZone}, version ${sent.templateVersion}, rendered ${iso(sent.renderedAt)})`
      : `  subject not rendered yet (rendered at the next send${intent.replays > 0 ? ', from the current templates' : ''})`,
  );
  for (const a of t.attempts) {
    const provider = [a.providerStatus, a.providerCode].filter((x) => x !== null).join(' ');
    const detail = [
      // The account it went through (and its provider), where accounts were recorded.
      a.account ? `${a.account} (${a.provider ?? '?'})` : (a.provider ?? ''),
      provider,
      a.durationMs !== null ? `${a.durationMs}ms` : '',
      a.outcomeUnknown ? 'outcome unknown' : '',
      a.batchId ? `sent in batch ${a.batchId} (${a.batchMembers ?? '?'} members)` : '',
      a.receipt ? `receipt ${a.receipt}` : '',
      a.error ?? '',
    ].filter(Boolean);
    lines.push(`  #${a.attempt} ${iso(a.startedAt)}  ${(a.outcome ?? 'in flight').padEnd(13)} ${detail.join('  ')}`);
  }
  if (t.events.length > 0) lines.push(`provider events (${t.events.length}):`);
  for (const e of t.events) {
    const detail = [e.provider, e.providerType ?? '', `message ${e.messageId}`, e.reason ?? ''].filter(Boolean);
    lines.push(`  ${iso(e.occurredAt)}  ${outcomeWords(e).padEnd(13)} ${detail.join('  ')}`);
  }
  return lines;
}

export function registerTrace(program: Command, context: ContextFactory): void {
  program
    .command('trace')
    .description("tell one hold's story: became eligible, was expired, email available, email accepted, delivered/bounced/complained, every attempt and provider event")
    .argument('<holdId>', 'the hold to trace', holdIdArg)
    .option('--json', 'print the timeline as JSON')
    .action(async (holdId: string, options: { json?: boolean }) => {
      const ctx = context();
      const db = await ctx.database({ poolSize: 2, migrations: 'require' });
      try {
        const timeline = await holdTimeline(db.pool, db.schema, holdId);
        if (options.json) {
          // The recipient stays out of operator output, as it stays out of logs.
          const { customerEmail: _omit, ...hold } = timeline.hold;
          ctx.out(JSON.stringify({ ...timeline, hold }, null, 2));
        } else {
          for (const line of formatTimeline(timeline)) ctx.out(line);
        }
      } finally {
        await db.close();
      }
    });
}
