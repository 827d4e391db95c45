import type { Command } from 'commander';
import type { EmailStory, HoldTimeline } from '../../read/timeline.js';
import { emailWords } from '../../model/hold-states.js';
import type { ContextFactory } from '../context.js';
import { holdIdArg } from './args.js';
import { iso, seconds, table } from '../../format.js';

const delta = (from: Date | null, to: Date | null) =>
  from && to ? `+${seconds(Math.max(0, (to.getTime() - from.getTime()) / 1000))}` : '';

const outcomeWords = (e: { kind: string; bounceType: string | null }) => (e.bounceType ? `${e.kind} (${e.bounceType})` : e.kind);

/** One email's intent, rendering, attempts and provider events, as lines. */
function emailLines(email: EmailStory): string[] {
  const intent = email.intent;
  const flags = [
    intent.leased ? `leased until ${iso(intent.leaseExpiresAt)}` : '',
    intent.state === 'pending' ? `next attempt at ${iso(intent.availableAt)}` : '',
    intent.sendBy ? `deadline ${iso(intent.sendBy)}` : '',
    intent.replays > 0 ? `replayed ${intent.replays}x` : '',
    intent.possibleDuplicate ? 'POSSIBLE DUPLICATE' : '',
    intent.receipt ? `receipt ${intent.receipt}` : '',
    intent.sentAccount ? `sent by account ${intent.sentAccount}` : '',
    intent.state === 'pending' && intent.pinnedAccount ? `held to account ${intent.pinnedAccount} (an unknown outcome there)` : '',
    intent.lastError ? `last error: ${intent.lastError}` : '',
  ].filter(Boolean);
  const lines = [`${emailWords(email.kind)} ${intent.id}: ${intent.state}, ${intent.attempts} attempt(s)${flags.length ? '; ' + flags.join('; ') : ''}`];
  const sent = email.message;
  if (intent.state === 'voided' || intent.state === 'missed_deadline') {
    lines.push(`  never sent, and never will be (${intent.state === 'voided' ? 'voided' : 'missed its deadline'})`);
  } else {
    lines.push(
      sent
        ? `  subject ${JSON.stringify(sent.subject)}  (${sent.template}/${sent.templateLocale}, ${sent.locale}, ${sent.timeZone}, version ${sent.templateVersion}, rendered ${iso(sent.renderedAt)})`
        : `  subject not rendered yet (rendered at the next send${intent.replays > 0 ? ', from the current templates' : ''})`,
    );
  }
  for (const a of email.attempts) {
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
  if (email.events.length > 0) lines.push(`  provider events (${email.events.length}):`);
  for (const e of email.events) {
    const detail = [e.provider, e.providerType ?? '', `message ${e.messageId}`, e.reason ?? ''].filter(Boolean);
    lines.push(`    ${iso(e.occurredAt)}  ${outcomeWords(e).padEnd(13)} ${detail.join('  ')}`);
  }
  return lines;
}

/**
 * The hold's life in time order, then the design brief's five moments of
 * its expiry email (or why there is none), then every email's attempts and
 * provider events, as lines an operator reads top to bottom.
 */
export function formatTimeline(t: HoldTimeline): string[] {
  const { hold, moments: m } = t;
  const lines = [`hold ${hold.id}: ${hold.status}`];
  // The empty tenant (every hold created without one) says nothing worth a line.
  if (hold.tenant) lines.push(`  tenant  ${hold.tenant}`);
  lines.push('life:');
  for (const e of t.life) lines.push(`  ${iso(e.at)}  ${e.what}${e.detail ? `  (${e.detail})` : ''}`);
  if (hold.erasedAt) lines.push(`  personal data erased at ${iso(hold.erasedAt)}`);
  if (m.eligibleAt === null) {
    const how = hold.confirmedAt ? `confirmed at ${iso(hold.confirmedAt)}` : `cancelled at ${iso(hold.cancelledAt)}`;
    lines.push(`no expiry email: the hold was ${how}, before its deadline ${iso(hold.expiresAt)}, so none will be sent`);
  } else {
    const replayed = m.emailFirstAcceptedAt && m.emailAcceptedAt && m.emailFirstAcceptedAt.getTime() !== m.emailAcceptedAt.getTime();
    lines.push('expiry email:');
    lines.push(
      ...table([
        ['1. became eligible', `${iso(m.eligibleAt)}  (expiresAt)`],
        ['2. was expired', `${iso(m.expiredAt)}  ${delta(m.eligibleAt, m.expiredAt)}${m.expiredAt ? ' after eligible' : ''}`],
        ['3. email available', `${iso(m.emailAvailableAt)}  ${delta(m.expiredAt, m.emailAvailableAt)}${m.emailAvailableAt ? ' after expiry' : ''}`],
        ...(replayed
          ? ([
              ['4. email accepted', `${iso(m.emailFirstAcceptedAt)}  ${delta(m.emailAvailableAt, m.emailFirstAcceptedAt)} after available (first send)`],
              ['   and again', `${iso(m.emailAcceptedAt)}  ${delta(m.emailAvailableAt, m.emailAcceptedAt)} after available (replay)`],
            ] as Array<[string, string]>)
          : ([['4. email accepted', `${iso(m.emailAcceptedAt)}  ${delta(m.emailAvailableAt, m.emailAcceptedAt)}${m.emailAcceptedAt ? ' after available' : ''}`]] as Array<
              [string, string]
            >)),
        [
          `5. email ${t.outcome ? outcomeWords(t.outcome) : 'outcome'}`,
          t.outcome
            ? `${iso(m.emailOutcomeAt)}  ${delta(m.emailAcceptedAt, m.emailOutcomeAt)} after accepted (${t.outcome.provider})`
            : m.emailAcceptedAt
              ? '-  (no provider event yet)'
              : '-',
        ],
      ]),
    );
    if (!t.intent) lines.push('  no email intent yet (the hold is still held)');
  }
  for (const email of t.emails) lines.push(...emailLines(email));
  if (t.webhooks.length > 0) {
    lines.push('webhooks:');
    for (const w of t.webhooks) {
      const status = w.lastStatus !== null ? `, last HTTP ${w.lastStatus}` : w.lastError ? `, last: ${w.lastError}` : '';
      lines.push(`  ${w.id}  ${w.type} -> ${w.endpoint}: ${w.state} after ${w.attempts} attempt(s)${status}${w.replays > 0 ? `, replayed ${w.replays}` : ''}`);
    }
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
      const { holdTimeline } = await import('../../read/timeline.js');
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
