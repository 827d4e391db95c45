import { z } from 'zod';
import { NotFoundError } from '../../errors.js';
import { messagesSummary } from '../../tables/messages.js';
import { attemptsList } from '../../tables/attempts.js';
import { intentsGet, intentsList } from '../../tables/outbox.js';
import { IntentState } from '../../model/intent-states.js';
import { storableText } from '../../text.js';
import { tenantSchema } from '../../model/hold-input.js';
import { checkTenant, expectNoBody, intentIdSchema, listingTenant, opsOf, pageQuery, type ApiContext } from '../context.js';
import { answers, BAD_INPUT, json, page, type ZodApp } from '../shapes/common.js';
import { IntentDetailShape, IntentShape } from '../shapes/intents.js';
import { access } from '../auth.js';
import type { FastifyRequest } from 'fastify';

export const intentsListQuery = z
  .object({
    state: z.enum(Object.values(IntentState) as [IntentState, ...IntentState[]], `must be one of ${Object.values(IntentState).join(', ')}`).optional(),
    tenant: tenantSchema().optional().describe("only this tenant's intents (`?tenant=` alone: the empty tenant's)"),
    ...pageQuery,
  })
  .strict();

/** Which account to send through; Operations refuses one not in failover (400 naming `account`). */
export const moveBody = z.object({ account: storableText('must be an account name') }).strict();

const idParams = z.object({ id: intentIdSchema.describe('the intent id: reservation-expired:<holdId> (or -reminder, -confirmed)') });
const NOT_FOUND = 'no such intent (or one of a tenant this token may not see); `leasehold replay` suggests the full id for a hold id';

export function intentRoutes(app: ZodApp, ctx: ApiContext): void {
  const { pool, schema } = ctx;
  /** An intent the request's token may see, else the 404 a missing one gets; checked before any change. */
  const visible = async (request: FastifyRequest, id: string) => {
    const intent = await intentsGet(pool, schema, id);
    if (intent) checkTenant(request, intent.tenant, 'intent', id);
    return intent;
  };

  app.get(
    '/intents',
    {
      ...access('read', 'tenant'),
      schema: {
        summary: 'email intents newest first, optionally of one state and one tenant, keyset-paged',
        tags: ['intents'],
        querystring: intentsListQuery,
        response: answers({ 200: json(page('intents', IntentShape), 'a page of intents') }, { 400: BAD_INPUT }),
      },
    },
    async (request) => {
      const query = request.query;
      const scope = listingTenant(request, query.tenant);
      if (scope.empty) return { intents: [], nextCursor: null };
      return intentsList(pool, schema, {
        limit: query.limit,
        ...(query.state ? { state: query.state } : {}),
        ...(scope.tenant !== undefined ? { tenant: scope.tenant } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
    },
  );

  app.get(
    '/intents/:id',
    {
      ...access('read', 'tenant'),
      schema: {
        summary: 'an intent with its stored message summary and every attempt',
        tags: ['intents'],
        params: idParams,
        response: answers({ 200: json(IntentDetailShape, 'the intent') }, { 400: BAD_INPUT, 404: NOT_FOUND }),
      },
    },
    async (request) => {
      const { id } = request.params;
      const intent = await visible(request, id);
      if (!intent) throw new NotFoundError('intent', id);
      return { ...intent, message: await messagesSummary(pool, schema, id), attempts: await attemptsList(pool, schema, id) };
    },
  );

  app.post(
    '/intents/:id/replay',
    {
      ...access('operate', 'tenant'),
      schema: {
        summary: 'send again with a new idempotency key, without touching the hold',
        tags: ['intents'],
        params: idParams,
        response: answers(
          { 200: json(IntentShape, 'pending again') },
          { 400: BAD_INPUT, 404: NOT_FOUND, 409: 'intent_state: it cannot be replayed (still pending, or voided; error.state says which)' },
          { body: true },
        ),
      },
    },
    async (request) => {
      const { id } = request.params;
      expectNoBody(request.body);
      await visible(request, id);
      return opsOf(request, ctx).replay(id);
    },
  );

  // A pending intent to another account (e.g. off one that is paused or failing); refused while it is being sent or once finished (409).
  app.post(
    '/intents/:id/move',
    {
      ...access('operate', 'tenant'),
      schema: {
        summary:
          'send a pending intent through another account in failover, even one pinned by an unknown outcome (its acceptance is then flagged possibleDuplicate)',
        tags: ['intents'],
        params: idParams,
        body: moveBody,
        response: answers(
          { 200: json(IntentShape, 'moved') },
          { 400: BAD_INPUT, 404: NOT_FOUND, 409: 'intent_state: finished, or being sent now (its lease is live)' },
          { body: true },
        ),
      },
    },
    async (request) => {
      const { id } = request.params;
      await visible(request, id);
      return opsOf(request, ctx).moveIntent(id, request.body.account);
    },
  );
}
