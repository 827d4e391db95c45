import { z } from 'zod';
import { WEBHOOK_STATES, type WebhookState } from '../../model/webhook-events.js';
import { access } from '../auth.js';
import { expectNoBody, opsOf, type ApiContext } from '../context.js';
import { answers, BAD_INPUT, json, type ZodApp } from '../shapes/common.js';
import { AppWebhookListShape, AppWebhookShape } from '../shapes/app-webhooks.js';

export const appWebhooksQuery = z
  .object({
    state: z.enum(WEBHOOK_STATES as [WebhookState, ...WebhookState[]], `must be one of ${WEBHOOK_STATES.join(', ')}`).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(50).describe('1..500, default 50'),
  })
  .strict();

const idParams = z.object({ id: z.string().min(1).max(200).describe('the webhook-id (msg_...)') });

/**
 * The application's webhooks (src/webhooks/): `GET /v1/webhook-deliveries`
 * lists them newest first with each endpoint's backlog, and a given-up one
 * is sent again under its own webhook-id by
 * `POST /v1/webhook-deliveries/:id/replay` (audited, like `leasehold
 * webhooks replay`). Not /v1/webhooks: those paths are the providers'.
 */
export function appWebhookRoutes(app: ZodApp, ctx: ApiContext): void {
  app.get(
    '/webhook-deliveries',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: "the application's webhooks newest first (`?state=dead`: the given-up ones), and each endpoint's backlog",
        tags: ['application events'],
        querystring: appWebhooksQuery,
        response: answers({ 200: json(AppWebhookListShape, 'webhooks and backlog') }, { 400: BAD_INPUT }),
      },
    },
    async (request) => {
      const ops = opsOf(request, ctx).webhooks;
      const { state, limit } = request.query;
      return { webhooks: await ops.list({ limit, ...(state ? { state } : {}) }), backlog: await ops.backlog() };
    },
  );

  app.post(
    '/webhook-deliveries/:id/replay',
    {
      ...access('operate', 'fleet'),
      schema: {
        summary: 'send a given-up (dead) webhook again, under the same webhook-id',
        tags: ['application events'],
        params: idParams,
        response: answers(
          { 200: json(AppWebhookShape, 'pending again') },
          { 400: BAD_INPUT, 404: 'no such webhook', 409: 'webhook_state: it is pending or delivered, not given up' },
          { body: true },
        ),
      },
    },
    async (request) => {
      expectNoBody(request.body);
      return opsOf(request, ctx).webhooks.replay(request.params.id);
    },
  );
}
