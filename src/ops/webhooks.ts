import { NotFoundError, ValidationError, WebhookStateError } from '../errors.js';
import { AuditAction } from '../model/audit-actions.js';
import { WEBHOOK_ENDPOINT_NAME, WEBHOOK_ENDPOINT_NAME_RULE, WEBHOOK_STATES, type WebhookState } from '../model/webhook-events.js';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../runtime/clock.js';
import type { Queryable } from '../db/pool.js';
import { webhookEventsBacklog, webhookEventsGet, webhookEventsList, webhookEventsReplay, type WebhookBacklog, type WebhookEvent } from '../tables/webhook-events.js';
import { webhookEndpointsDeactivate, type EndpointRow } from '../tables/webhook-endpoints.js';
import type { AuditedChange } from './tenants.js';

export interface WebhookOperationsOptions {
  pool: Queryable;
  schema: string;
  clock: Clock;
  logger: Logger;
  change: AuditedChange;
}

/**
 * What an operator does with the application's webhooks: list them (the
 * given-up ones above all), see each endpoint's backlog, replay a
 * given-up one under its own webhook-id, and turn an endpoint off. `Operations.webhooks`; the CLI's
 * `leasehold webhooks` and the API's /v1/webhook-deliveries go through it.
 */
export class WebhookOperations {
  constructor(private readonly options: WebhookOperationsOptions) {}

  async list(options: { state?: string; limit?: number } = {}): Promise<WebhookEvent[]> {
    if (options.state !== undefined && !WEBHOOK_STATES.includes(options.state as WebhookState)) {
      throw new ValidationError('state', `must be one of ${WEBHOOK_STATES.join(', ')}`);
    }
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new ValidationError('limit', 'must be a whole number from 1 to 500');
    return webhookEventsList(this.options.pool, this.options.schema, { limit, ...(options.state ? { state: options.state as WebhookState } : {}) });
  }

  async backlog(): Promise<WebhookBacklog[]> {
    return webhookEventsBacklog(this.options.pool, this.options.schema, this.options.clock.now());
  }

  /** A dead webhook back to pending, due now, same webhook-id, with its audit entry in the same transaction. */
  async replay(id: string): Promise<WebhookEvent> {
    if (typeof id !== 'string' || id.length === 0 || id.length > 200) throw new ValidationError('id', 'must be a webhook id (msg_...)');
    const event = await this.options.change(async (db, audit) => {
      const replayed = await webhookEventsReplay(db, this.options.schema, id, this.options.clock.now());
      if (!replayed) {
        const existing = await webhookEventsGet(db, this.options.schema, id);
        if (!existing) throw new NotFoundError('webhook', id);
        throw new WebhookStateError(id, existing.state);
      }
      await audit({
        action: AuditAction.webhookReplay,
        target: id,
        before: { state: 'dead' },
        after: { state: replayed.state, replays: replayed.replays },
        detail: { endpoint: replayed.endpoint, type: replayed.type },
      });
      return replayed;
    });
    this.options.logger.info({ event: 'webhook.replayed', webhookId: id, endpoint: event.endpoint, type: event.type, holdId: event.holdId }, 'webhook replayed');
    return event;
  }

  /**
   * Turn an endpoint off, audited: the triggers write no more events for it
   * (its pending ones stay). Delivery processes never do this by
   * themselves; one started with the endpoint configured turns it on again.
   * Returns the endpoint as it is now.
   */
  async deactivateEndpoint(name: string): Promise<EndpointRow> {
    if (typeof name !== 'string' || !WEBHOOK_ENDPOINT_NAME.test(name)) throw new ValidationError('name', WEBHOOK_ENDPOINT_NAME_RULE);
    const before = await this.options.change(async (db, audit) => {
      const row = await webhookEndpointsDeactivate(db, this.options.schema, name, this.options.clock.now());
      if (!row) throw new NotFoundError('webhook endpoint', name);
      if (row.active) await audit({ action: AuditAction.webhookEndpointDeactivate, target: name, before: { active: true }, after: { active: false } });
      return row;
    });
    if (before.active) this.options.logger.info({ event: 'webhook_endpoint.deactivated', endpoint: name }, 'webhook endpoint turned off');
    return { ...before, active: false };
  }
}
