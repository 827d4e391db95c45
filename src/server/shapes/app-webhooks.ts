import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES, WebhookState } from '../../model/webhook-events.js';
import type { WebhookBacklog, WebhookEvent } from '../../tables/webhook-events.js';
import { NullableTimestamp, Timestamp, valuesOf, type SameKeys } from './common.js';

/** The application's webhooks (tables/webhook-events.ts): one delivery of one event to one endpoint. */
export const AppWebhookShape = z
  .object({
    id: z.string().describe('the webhook-id, the same on every attempt and replay'),
    endpoint: z.string().describe('the endpoint name (LEASEHOLD_WEBHOOK_URL is `default`)'),
    type: z.enum(WEBHOOK_EVENT_TYPES),
    holdId: z.string().nullable(),
    intentId: z.string().nullable(),
    tenant: z.string(),
    state: z.enum(valuesOf(WebhookState)).describe('pending, delivered, or dead (given up; replayable)'),
    attempts: z.number().int(),
    occurredAt: Timestamp,
    createdAt: Timestamp,
    availableAt: Timestamp.describe('when it is (or was) due next'),
    leased: z.boolean(),
    lastStatus: z.number().int().nullable().describe("the last attempt's HTTP status; null: none yet, or no answer"),
    lastError: z.string().nullable(),
    finishedAt: NullableTimestamp,
    replays: z.number().int(),
  })
  .meta({ id: 'AppWebhook' });

export const AppWebhookBacklogShape = z.object({
  endpoint: z.string(),
  pending: z.number().int(),
  dead: z.number().int(),
  oldestPendingAgeSeconds: z.number(),
});

export const AppWebhookListShape = z
  .object({ webhooks: z.array(AppWebhookShape), backlog: z.array(AppWebhookBacklogShape).describe('per endpoint: pending, dead, oldest pending age') })
  .meta({ id: 'AppWebhookList' });

const _event: SameKeys<z.output<typeof AppWebhookShape>, WebhookEvent> = true;
const _backlog: SameKeys<z.output<typeof AppWebhookBacklogShape>, WebhookBacklog> = true;
void [_event, _backlog];
