import { NotFoundError } from '../errors.js';
import type { Queryable } from '../db/pool.js';
import { eventsForIntent } from '../tables/events.js';
import { emailOutcome, type EmailEvent, type EmailOutcome } from '../model/event-kinds.js';
import { getHold } from '../holds/holds.js';
import { emailWords, EXPIRED_TEMPLATE, type Hold } from '../model/hold-states.js';
import { messagesSummary, type MessageSummary } from '../tables/messages.js';
import { attemptsList } from '../tables/attempts.js';
import { holdExtensionsList, type HoldExtension } from '../tables/hold-extensions.js';
import { intentsOfHold } from '../tables/outbox.js';
import type { Attempt, Intent } from '../model/intent-states.js';
import { webhookEventsOfHold, type WebhookEvent } from '../tables/webhook-events.js';

/**
 * A hold's whole life: created, each extension, its reminder (sent, voided
 * or missed), expired or confirmed or cancelled, and each email's story
 * (every attempt, every provider event, how it ended). The API
 * (`GET /v1/holds/:id`), `trace` and the dashboard all tell it from here,
 * so they never disagree.
 *
 * The top-level `intent`, `message`, `moments`, `outcome`, `lateness`,
 * `attempts` and `events` are the expiry email's: the design brief's five
 * moments. `emails` has every email of the hold, the expiry email included.
 */
export interface HoldTimeline {
  hold: Hold;
  /** The expiry email, or null: none yet (still held) or none ever (confirmed or cancelled first). */
  intent: Intent | null;
  /** The rendered message every attempt sends (subject, template, locale); null until the first lease or after a replay. */
  message: MessageSummary | null;
  moments: {
    /** The hold's deadline, from which it was due; null when it was confirmed or cancelled first (it never fell due). */
    eligibleAt: Date | null;
    /** The expiry worker moved it to expired (and wrote the intent). */
    expiredAt: Date | null;
    /** The email intent was created (available to the delivery lane). */
    emailAvailableAt: Date | null;
    /** A provider accepted the email (after a replay: the replay's acceptance). */
    emailAcceptedAt: Date | null;
    /** The first acceptance, before any replay (the same as emailAcceptedAt when there was none). */
    emailFirstAcceptedAt: Date | null;
    /** 5. The provider reported how it ended (see `outcome`): delivered, bounced, complained, ... */
    emailOutcomeAt: Date | null;
  };
  /** The event that says how the accepted email ended; null until the provider reports. */
  outcome: EmailOutcome | null;
  /** Seconds between consecutive moments, where both are known. */
  lateness: {
    expirySeconds: number | null;
    /** From available to the current acceptance (a replay's, after one). */
    emailSeconds: number | null;
    /** From available to the first acceptance. */
    firstEmailSeconds: number | null;
    /** From acceptance to the provider's outcome. */
    outcomeSeconds: number | null;
  };
  attempts: Attempt[];
  /** Provider events in the provider's order (duplicates stored once). */
  events: EmailEvent[];
  /** Each extension of the hold, in order. */
  extensions: HoldExtension[];
  /** Every email of the hold (reminder, expiry, confirmation), in the order they became available. */
  emails: EmailStory[];
  /** The application's webhooks about this hold (one per event and endpoint), in the order they were written. */
  webhooks: WebhookEvent[];
  /** The whole life in time order, one line each: what `trace` and the dashboard print. */
  life: LifeEvent[];
}

export interface EmailStory {
  /** reservation-reminder, reservation-expired or reservation-confirmed. */
  kind: string;
  intent: Intent;
  message: MessageSummary | null;
  attempts: Attempt[];
  events: EmailEvent[];
  outcome: EmailOutcome | null;
  /** The first attempt a provider accepted (before any replay), or null. */
  firstAcceptedAt: Date | null;
}

export interface LifeEvent {
  at: Date;
  /** e.g. `created`, `extended`, `reminder sent`, `reminder voided`, `reminder missed its deadline`, `expired`, `expiry email accepted`. */
  what: string;
  detail?: string;
}

const secondsBetween = (from: Date | null, to: Date | null) =>
  from && to ? Math.round((to.getTime() - from.getTime()) / 10) / 100 : null;


async function emailStory(db: Queryable, schema: string, intent: Intent): Promise<EmailStory> {
  const [attempts, events, message] = await Promise.all([
    attemptsList(db, schema, intent.id),
    eventsForIntent(db, schema, intent.id),
    messagesSummary(db, schema, intent.id),
  ]);
  // The outcome of the email as it stands: the events of its current receipt
  // (a replay starts a new email; until it is accepted there is none).
  const outcome = intent.receipt ? emailOutcome(events.filter((e) => e.messageId === intent.receipt)) : null;
  const first = attempts.find((a) => a.outcome === 'accepted');
  return { kind: intent.template, intent, message, attempts, events, outcome, firstAcceptedAt: first ? (first.finishedAt ?? first.startedAt) : null };
}

const attemptsWord = (n: number) => `${n} attempt${n === 1 ? '' : 's'}`;

function webhookLife(w: WebhookEvent): LifeEvent {
  const to = `webhook ${w.type} to ${w.endpoint}`;
  const tries = `${attemptsWord(w.attempts)}, ${w.id}`;
  if (w.state === 'delivered') return { at: w.finishedAt!, what: `${to} delivered`, detail: tries };
  if (w.state === 'dead') return { at: w.finishedAt!, what: `${to} given up`, detail: `${tries}; last: ${w.lastError ?? '?'}` };
  return { at: w.availableAt, what: `${to} due`, detail: w.lastError ? `${tries}; last: ${w.lastError}` : tries };
}

function lifeOf(hold: Hold, extensions: HoldExtension[], emails: EmailStory[], webhooks: WebhookEvent[]): LifeEvent[] {
  // The deadline it was created with: before the first extension, if any.
  const created = extensions[0]?.from ?? hold.expiresAt;
  const life: LifeEvent[] = [{ at: hold.createdAt, what: 'created', detail: `expires at ${created.toISOString()}` }];
  for (const e of extensions) life.push({ at: e.at, what: 'extended', detail: `from ${e.from.toISOString()} to ${e.to.toISOString()}` });
  if (hold.expiredAt) life.push({ at: hold.expiredAt, what: 'expired' });
  if (hold.confirmedAt) life.push({ at: hold.confirmedAt, what: 'confirmed' });
  if (hold.cancelledAt) life.push({ at: hold.cancelledAt, what: 'cancelled' });
  for (const email of emails) {
    const name = emailWords(email.kind);
    const i = email.intent;
    if (i.state === 'pending') {
      const by = i.sendBy ? `, to be sent by ${i.sendBy.toISOString()}` : '';
      life.push({ at: i.availableAt, what: `${name} due`, detail: `${i.attempts > 0 ? 'next attempt' : 'first attempt'} at ${i.availableAt.toISOString()}${by}` });
      continue;
    }
    // Each send counts the attempts it took, not every attempt the intent ever
    // made: after a replay the list also holds the replay's attempts.
    const firstAccepted = email.attempts.findIndex((a) => a.outcome === 'accepted');
    if (email.firstAcceptedAt) life.push({ at: email.firstAcceptedAt, what: `${name} sent`, detail: `after ${attemptsWord(firstAccepted + 1)}` });
    if (i.replays > 0 && i.sentAt && email.firstAcceptedAt && i.sentAt.getTime() !== email.firstAcceptedAt.getTime()) {
      const lastAccepted = email.attempts.findLastIndex((a) => a.outcome === 'accepted');
      life.push({ at: i.sentAt, what: `${name} sent again (replay ${i.replays})`, detail: `after ${attemptsWord(lastAccepted - firstAccepted)}` });
    }
    if (i.state === 'voided') life.push({ at: i.finishedAt!, what: `${name} voided`, detail: i.lastError ?? 'never sent' });
    if (i.state === 'missed_deadline') {
      life.push({ at: i.finishedAt!, what: `${name} missed its deadline`, detail: `not sent by ${i.sendBy?.toISOString() ?? '?'}, never sent` });
    }
    if (i.state === 'rejected' || i.state === 'dead') life.push({ at: i.finishedAt!, what: `${name} ${i.state}`, detail: i.lastError ?? '' });
    if (email.outcome) life.push({ at: email.outcome.at, what: `${name} ${email.outcome.kind}`, detail: email.outcome.provider });
  }
  for (const w of webhooks) life.push(webhookLife(w));
  // Time order; at one instant, cause before effect: the hold's own change,
  // then what it did to its emails (voided, missed), then sends and outcomes.
  const rank = (e: LifeEvent) =>
    e.what === 'created' ? 0 : e.what === 'extended' ? 1 : ['expired', 'confirmed', 'cancelled'].includes(e.what) ? 2 : / (voided|missed)/.test(e.what) ? 3 : 4;
  return life.sort((a, b) => a.at.getTime() - b.at.getTime() || rank(a) - rank(b));
}

export async function holdTimeline(db: Queryable, schema: string, holdId: string): Promise<HoldTimeline> {
  const hold = await getHold(db, holdId, { schema });
  if (!hold) throw new NotFoundError('hold', holdId);
  const [intents, extensions, webhooks] = await Promise.all([
    intentsOfHold(db, schema, hold.id),
    holdExtensionsList(db, schema, hold.id),
    webhookEventsOfHold(db, schema, hold.id),
  ]);
  const emails = await Promise.all(intents.map((intent) => emailStory(db, schema, intent)));
  const expiry = emails.find((e) => e.kind === EXPIRED_TEMPLATE) ?? null;
  const intent = expiry?.intent ?? null;
  const settledFirst = hold.status === 'confirmed' || hold.status === 'cancelled';
  const moments = {
    eligibleAt: settledFirst ? null : hold.expiresAt,
    expiredAt: hold.expiredAt,
    emailAvailableAt: intent?.createdAt ?? null,
    emailAcceptedAt: intent?.sentAt ?? null,
    emailFirstAcceptedAt: expiry?.firstAcceptedAt ?? null,
    emailOutcomeAt: expiry?.outcome?.at ?? null,
  };
  return {
    hold,
    intent,
    message: expiry?.message ?? null,
    moments,
    outcome: expiry?.outcome ?? null,
    lateness: {
      expirySeconds: secondsBetween(moments.eligibleAt, moments.expiredAt),
      emailSeconds: secondsBetween(moments.emailAvailableAt, moments.emailAcceptedAt),
      firstEmailSeconds: secondsBetween(moments.emailAvailableAt, moments.emailFirstAcceptedAt),
      outcomeSeconds: secondsBetween(moments.emailAcceptedAt, moments.emailOutcomeAt),
    },
    attempts: expiry?.attempts ?? [],
    events: expiry?.events ?? [],
    extensions,
    emails,
    webhooks,
    life: lifeOf(hold, extensions, emails, webhooks),
  };
}
