import { z } from 'zod';
import { HoldStatus, type Hold } from '../../model/hold-states.js';
import { createHoldSchema, extendHoldSchema } from '../../model/hold-input.js';
import type { HoldTimeline } from '../../read/timeline.js';
import { NullableTimestamp, Timestamp, valuesOf, type SameKeys } from './common.js';
import { AppWebhookShape } from './app-webhooks.js';
import { AttemptShape, EmailEventShape, EmailOutcomeShape, IntentShape, MessageShape } from './intents.js';

/** The answers about holds, and the create and extend bodies as HTTP takes them. */

export const HoldShape = z
  .object({
    id: z.string(),
    customerEmail: z.string().nullable().describe('null once erased'),
    status: z.enum(valuesOf(HoldStatus)),
    expiresAt: Timestamp,
    createdAt: Timestamp,
    confirmedAt: NullableTimestamp,
    cancelledAt: NullableTimestamp,
    expiredAt: NullableTimestamp,
    metadata: z.record(z.string(), z.unknown()),
    tenant: z.string().describe("the tenant it belongs to ('' is the empty tenant, the default)"),
    erasedAt: NullableTimestamp,
    remindBeforeSeconds: z.number().int().nullable().describe('a reminder goes out this many seconds before expiresAt (null: none)'),
    notifyOnConfirm: z.boolean().describe('confirming it sends a confirmation email'),
  })
  .meta({ id: 'Hold' });

const seconds = () => z.number().nullable();

const EmailStoryShape = z.object({
  kind: z.string().describe('reservation-reminder, reservation-expired or reservation-confirmed'),
  intent: IntentShape,
  message: MessageShape.nullable(),
  attempts: z.array(AttemptShape),
  events: z.array(EmailEventShape),
  outcome: EmailOutcomeShape.nullable(),
  firstAcceptedAt: NullableTimestamp.describe('the first attempt a provider accepted (before any replay)'),
});

/** `GET /v1/holds/{id}`: the hold's whole life (read/timeline.ts HoldTimeline). */
export const HoldTimelineShape = z
  .object({
    hold: HoldShape,
    intent: IntentShape.nullable().describe('the expiry email; null: none yet (still held) or none ever (confirmed or cancelled first)'),
    message: MessageShape.nullable(),
    moments: z.object({
      eligibleAt: NullableTimestamp.describe('its deadline, from which it was due; null when confirmed or cancelled first'),
      expiredAt: NullableTimestamp,
      emailAvailableAt: NullableTimestamp,
      emailAcceptedAt: NullableTimestamp.describe("a provider accepted the email (after a replay: the replay's acceptance)"),
      emailFirstAcceptedAt: NullableTimestamp,
      emailOutcomeAt: NullableTimestamp,
    }),
    outcome: EmailOutcomeShape.nullable(),
    lateness: z
      .object({ expirySeconds: seconds(), emailSeconds: seconds(), firstEmailSeconds: seconds(), outcomeSeconds: seconds() })
      .describe('seconds between consecutive moments, where both are known'),
    attempts: z.array(AttemptShape).describe("the expiry email's attempts"),
    events: z.array(EmailEventShape).describe("the expiry email's provider events"),
    extensions: z.array(z.object({ at: Timestamp, from: Timestamp, to: Timestamp })),
    emails: z.array(EmailStoryShape).describe('every email of the hold, in the order they became available'),
    webhooks: z.array(AppWebhookShape).describe("the application's webhooks about the hold, one per event and endpoint"),
    life: z
      .array(z.object({ at: Timestamp, what: z.string(), detail: z.string().optional() }))
      .describe('the whole life in time order, one line each (what `leasehold trace` prints)'),
  })
  .meta({ id: 'HoldTimeline' });

/** The create-hold body over HTTP: expiresAt is a timestamp string (the library also takes a Date). */
export const createHoldBody = () =>
  createHoldSchema().extend({
    expiresAt: Timestamp.optional().describe('in the future and within 30 days; exactly one of expiresAt and ttlSeconds'),
    ttlSeconds: createHoldSchema().shape.ttlSeconds.describe('1..2592000; exactly one of expiresAt and ttlSeconds'),
    customerEmail: createHoldSchema().shape.customerEmail.describe(
      'an internationalized domain is accepted and stored as punycode (ana@bücher.de is ana@xn--bcher-kva.de); the local part must be ASCII (Amazon SES and Postmark refuse SMTPUTF8 addresses)',
    ),
    remindBeforeSeconds: createHoldSchema().shape.remindBeforeSeconds.describe(
      'send a reminder this many seconds before expiry; less than the hold lasts (a longer one is refused, as it could never be sent). Default LEASEHOLD_REMIND_BEFORE_S',
    ),
    tenant: createHoldSchema().shape.tenant.describe(
      "whose hold this is: empty, or 1-128 characters by the rule of an id; default '' (the empty tenant). Its intent carries it",
    ),
  });

export const extendHoldBody = () =>
  extendHoldSchema().extend({
    expiresAt: Timestamp.optional().describe('the new deadline, later than the current one; exactly one of expiresAt and ttlSeconds'),
    ttlSeconds: extendHoldSchema().shape.ttlSeconds.describe('the new deadline in seconds from now; exactly one of expiresAt and ttlSeconds'),
  });

const _hold: SameKeys<z.output<typeof HoldShape>, Hold> = true;
const _timeline: SameKeys<z.output<typeof HoldTimelineShape>, HoldTimeline> = true;
void [_hold, _timeline];
