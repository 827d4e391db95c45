import { z } from 'zod';
import { BounceType, EventKind, type EmailEvent, type EmailOutcome } from '../../model/event-kinds.js';
import { AttemptOutcome, IntentState, type Attempt, type Intent } from '../../model/intent-states.js';
import type { MessageSummary } from '../../tables/messages.js';
import { valuesOf, NullableTimestamp, Timestamp, type SameKeys } from './common.js';

/** The answers about email intents: an intent, its attempts, its stored message and its provider events. */


export const IntentShape = z
  .object({
    id: z.string().describe('reservation-expired:<holdId> (or -reminder, -confirmed)'),
    holdId: z.string(),
    tenant: z.string().describe("its hold's tenant ('' is the empty tenant)"),
    template: z.string().describe('reservation-expired, reservation-reminder or reservation-confirmed'),
    state: z.enum(valuesOf(IntentState)),
    sendBy: NullableTimestamp.describe('its deadline: still unsent then, it ends missed_deadline (null: none)'),
    attempts: z.number().int().describe('attempts made, every outcome counted'),
    failedAttempts: z.number().int().describe('attempts that failed, counted against LEASEHOLD_MAX_ATTEMPTS'),
    availableAt: Timestamp.describe('when it may next be leased'),
    createdAt: Timestamp,
    sentAt: NullableTimestamp,
    finishedAt: NullableTimestamp.describe('when it reached a final state'),
    receipt: z.string().nullable().describe("the provider's message id"),
    lastError: z.string().nullable(),
    leased: z.boolean().describe('a worker holds it now'),
    leaseExpiresAt: NullableTimestamp,
    leaseExpirations: z.number().int().describe('leases that ran out (a worker died holding it)'),
    replays: z.number().int(),
    possibleDuplicate: z.boolean().describe('an attempt whose outcome is unknown preceded the acceptance: the customer may have two'),
    account: z.string().nullable().describe('the provider account it is on (null: not yet leased; it starts on the first in failover)'),
    pinnedAccount: z.string().nullable().describe('held to this account by an attempt whose outcome is unknown there'),
    sentAccount: z.string().nullable().describe('the account that accepted it'),
  })
  .meta({ id: 'Intent' });

export const AttemptShape = z
  .object({
    attempt: z.number().int(),
    provider: z.string().nullable(),
    account: z.string().nullable(),
    startedAt: Timestamp,
    finishedAt: NullableTimestamp,
    outcome: z.enum(valuesOf(AttemptOutcome)).nullable().describe('null: in flight'),
    outcomeUnknown: z.boolean().describe('the request may have reached the provider (a timeout): it counts as possibly sent'),
    providerStatus: z.number().int().nullable(),
    providerCode: z.string().nullable(),
    receipt: z.string().nullable(),
    error: z.string().nullable(),
    durationMs: z.number().nullable(),
    batchId: z.string().nullable().describe('the batch it was sent in (one request for several emails); null: alone'),
    batchMembers: z.number().int().nullable(),
  })
  .meta({ id: 'Attempt' });

export const MessageShape = z
  .object({
    subject: z.string(),
    from: z.string(),
    replyTo: z.string().nullable(),
    template: z.string(),
    templateLocale: z.string(),
    locale: z.string(),
    timeZone: z.string(),
    templateVersion: z.string(),
    renderedAt: Timestamp,
  })
  .meta({ id: 'Message', description: 'the rendered message every attempt sends (never the address or the body)' });

export const EmailEventShape = z
  .object({
    provider: z.string(),
    providerEventId: z.string(),
    messageId: z.string(),
    intentId: z.string().nullable(),
    kind: z.enum(valuesOf(EventKind)),
    bounceType: z.enum(valuesOf(BounceType)).nullable(),
    providerType: z.string().nullable(),
    reason: z.string().nullable(),
    occurredAt: Timestamp,
    receivedAt: Timestamp,
  })
  .meta({ id: 'EmailEvent' });

export const EmailOutcomeShape = z
  .object({ kind: z.enum(valuesOf(EventKind)), bounceType: z.enum(valuesOf(BounceType)).nullable(), at: Timestamp, provider: z.string(), reason: z.string().nullable() })
  .meta({ id: 'EmailOutcome', description: 'the provider event that says how the accepted email ended' });

/** `GET /v1/intents/{id}`: the intent, its stored message and every attempt. */
export const IntentDetailShape = IntentShape.extend({
  message: MessageShape.nullable().describe('null until the first lease, or after a replay'),
  attempts: z.array(AttemptShape).describe('every attempt, oldest first'),
}).meta({ id: 'IntentDetail' });

const _intent: SameKeys<z.output<typeof IntentShape>, Intent> = true;
const _attempt: SameKeys<z.output<typeof AttemptShape>, Attempt> = true;
const _message: SameKeys<z.output<typeof MessageShape>, MessageSummary> = true;
const _event: SameKeys<z.output<typeof EmailEventShape>, EmailEvent> = true;
const _outcome: SameKeys<z.output<typeof EmailOutcomeShape>, EmailOutcome> = true;
void [_intent, _attempt, _message, _event, _outcome];
