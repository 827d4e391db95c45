import { z } from 'zod';
import { HoldStatus } from '../model/hold-states.js';
import { createHoldSchema } from '../model/hold-input.js';
import { IntentState } from '../model/intent-states.js';

/**
 * The response shapes of the HTTP contract (server/openapi.ts puts them in
 * the document), kept deliberately open (additional properties allowed:
 * adding fields is not a breaking change), and the /v1 create-hold body.
 */

const timestamp = z.iso.datetime({ offset: true });
const nullableTimestamp = timestamp.nullable();

export const HoldShape = z.looseObject({
  id: z.string(),
  customerEmail: z.string().nullable().describe('null once erased'),
  status: z.enum(Object.values(HoldStatus) as [HoldStatus, ...HoldStatus[]]),
  expiresAt: timestamp,
  createdAt: timestamp,
  confirmedAt: nullableTimestamp,
  cancelledAt: nullableTimestamp,
  expiredAt: nullableTimestamp,
  metadata: z.record(z.string(), z.unknown()),
  tenant: z.string().describe("the tenant it belongs to ('' is the empty tenant, the default)"),
  erasedAt: nullableTimestamp,
  remindBeforeSeconds: z.number().int().nullable().describe('a reminder goes out this many seconds before expiresAt (null: none)'),
  notifyOnConfirm: z.boolean().describe('confirming it sends a confirmation email'),
});

export const IntentShape = z.looseObject({
  id: z.string(),
  holdId: z.string(),
  tenant: z.string().describe("its hold's tenant ('' is the empty tenant)"),
  template: z.string(),
  state: z.enum(Object.values(IntentState) as [IntentState, ...IntentState[]]),
  sendBy: nullableTimestamp.describe('its deadline: still unsent then, it ends missed_deadline (null: none)'),
  attempts: z.number().int(),
  availableAt: timestamp,
  createdAt: timestamp,
  sentAt: nullableTimestamp,
  receipt: z.string().nullable(),
  possibleDuplicate: z.boolean(),
  account: z.string().nullable().describe('the provider account it is on (null: not yet leased; it starts on the first in failover)'),
  pinnedAccount: z.string().nullable().describe('held to this account by an attempt whose outcome is unknown there'),
  sentAccount: z.string().nullable().describe('the account that accepted it'),
});

export const ErrorShape = z.object({
  error: z.looseObject({
    code: z.string(),
    message: z.string(),
    field: z.string().optional().describe('the field a 400 is about'),
    status: z.string().optional().describe("hold_not_held: the hold's current status"),
  }),
});

export const RateLimitShape = z.looseObject({ perSecond: z.number(), burst: z.number().int(), tokens: z.number() });
export const DeliveryShape = z.looseObject({
  paused: z.boolean().describe('the fleet-wide pause'),
  reason: z.string().nullable(),
  pausedUntil: nullableTimestamp,
  pausedAccounts: z.array(z.string()).optional().describe('accounts in failover whose own pause is in force (every one: nothing is sent)'),
});
export const AnyObject = z.looseObject({});
const PauseShape = z.looseObject({ paused: z.boolean(), reason: z.string().nullable(), pausedBy: z.string().nullable(), pausedUntil: nullableTimestamp });
export const AccountShape = z.looseObject({
  name: z.string(),
  provider: z.string(),
  failoverIndex: z.number().int().nullable().describe('its place in failover (0: first); null: not in failover'),
  unit: z.enum(['requests', 'emails']).describe('what one permit stands for'),
  dailyQuota: z.number().int().nullable(),
  rate: RateLimitShape,
  pause: PauseShape.describe("the account's own pause (the fleet's is /v1/delivery)"),
  coolingDown: z.boolean(),
  cooldownUntil: nullableTimestamp,
  backlog: z.number().int().describe('pending intents on it'),
  lastMinute: z.record(z.string(), z.number().int()).describe('attempts finished through it in the last minute, by outcome'),
});

export const TenantPolicyShape = z.looseObject({
  tenant: z.string().describe("'' is the empty tenant"),
  perSecond: z.number().nullable().describe('the cap on its sends per second; null: no cap'),
  burst: z.number().int().nullable().describe('most sends at once under the cap; null: no cap'),
  weight: z.number().int().describe("its share of an account's permits against other tenants"),
  account: z.string().nullable().describe('the account its email goes through; null: failover as usual'),
  from: z.string().nullable().describe("its sender; null: the templates'"),
  replyTo: z.string().nullable().describe("its reply-to; null: the templates'"),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const TenantBacklogShape = z.object({
  tenant: z.string(),
  backlog: z.number().int().describe('pending intents'),
  oldestAgeSeconds: z.number().describe('age of its oldest pending intent'),
  sentLastMinute: z.number().int(),
  paused: z.boolean(),
  pauseReason: z.string().nullable(),
});

export const TenantPauseShape = z.object({ tenant: z.string(), paused: z.boolean(), reason: z.string().nullable(), pausedAt: nullableTimestamp });

// The /v1 create-hold body over HTTP: expiresAt is a string (the library also takes a Date).
export const createHoldBody = createHoldSchema().extend({
  expiresAt: timestamp.optional().describe('ISO 8601 with a zone, in the future and within 30 days; exactly one of expiresAt and ttlSeconds'),
  ttlSeconds: createHoldSchema().shape.ttlSeconds.describe('1..2592000; exactly one of expiresAt and ttlSeconds'),
  tenant: createHoldSchema().shape.tenant.describe("whose hold this is: empty, or 1-128 characters by the rule of an id; default '' (the empty tenant). Its intent carries it"),
});

