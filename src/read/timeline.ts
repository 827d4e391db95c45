import { NotFoundError } from '../errors.js';
import type { Queryable } from '../db/pool.js';
import { eventsForIntent } from '../tables/events.js';
import { emailOutcome, type EmailEvent, type EmailOutcome } from '../model/event-kinds.js';
import { getHold } from '../holds/holds.js';
import type { Hold } from '../model/hold-states.js';
import { messagesSummary, type MessageSummary } from '../tables/messages.js';
import { attemptsList } from '../tables/attempts.js';
import { intentsGetByHold } from '../tables/outbox.js';
import type { Attempt, Intent } from '../model/intent-states.js';

/**
 * A hold's notification story: the four moments of the brief, the fifth
 * (what the provider reported: delivered, bounced, complained), every send
 * attempt and every provider event. The API (`GET /v1/holds/:id`) and the `trace` command both tell it
 * from here, so they never disagree.
 */
export interface HoldTimeline {
  hold: Hold;
  intent: Intent | null;
  /** The rendered message every attempt sends (subject, template, locale); null until the first lease or after a replay. */
  message: MessageSummary | null;
  moments: {
    /** The hold's deadline: from here it was due. */
    eligibleAt: Date;
    /** The expiry worker moved it to expired (and wrote the intent). */
    expiredAt: Date | null;
    /** The email intent was created (available to the delivery lane). */
    emailAvailableAt: Date | null;
    /** A provider accepted the email. */
    emailAcceptedAt: Date | null;
    /** 5. The provider reported how it ended (see `outcome`): delivered, bounced, complained, ... */
    emailOutcomeAt: Date | null;
  };
  /** The event that says how the accepted email ended; null until the provider reports. */
  outcome: EmailOutcome | null;
  /** Seconds between consecutive moments, where both are known. */
  lateness: {
    expirySeconds: number | null;
    emailSeconds: number | null;
    /** From acceptance to the provider's outcome. */
    outcomeSeconds: number | null;
  };
  attempts: Attempt[];
  /** Provider events in the provider's order (duplicates stored once). */
  events: EmailEvent[];
}

const secondsBetween = (from: Date | null, to: Date | null) =>
  from && to ? Math.round((to.getTime() - from.getTime()) / 10) / 100 : null;

export async function holdTimeline(db: Queryable, schema: string, holdId: string): Promise<HoldTimeline> {
  const hold = await getHold(db, holdId, { schema });
  if (!hold) throw new NotFoundError('hold', holdId);
  const intent = (await intentsGetByHold(db, schema, hold.id)) ?? null;
  const attempts = intent ? await attemptsList(db, schema, intent.id) : [];
  const events = intent ? await eventsForIntent(db, schema, intent.id) : [];
  // The outcome of the email as it stands: the events of its current receipt
  // (a replay starts a new email; until it is accepted there is none).
  const outcome = intent?.receipt ? emailOutcome(events.filter((e) => e.messageId === intent.receipt)) : null;
  const message = intent ? await messagesSummary(db, schema, intent.id) : null;
  const moments = {
    eligibleAt: hold.expiresAt,
    expiredAt: hold.expiredAt,
    emailAvailableAt: intent?.createdAt ?? null,
    emailAcceptedAt: intent?.sentAt ?? null,
    emailOutcomeAt: outcome?.at ?? null,
  };
  return {
    hold,
    intent,
    message,
    moments,
    outcome,
    lateness: {
      expirySeconds: secondsBetween(moments.eligibleAt, moments.expiredAt),
      emailSeconds: secondsBetween(moments.emailAvailableAt, moments.emailAcceptedAt),
      outcomeSeconds: secondsBetween(moments.emailAcceptedAt, moments.emailOutcomeAt),
    },
    attempts,
    events,
  };
}
