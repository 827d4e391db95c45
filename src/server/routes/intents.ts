import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { NotFoundError } from '../../errors.js';
import { messagesSummary } from '../../tables/messages.js';
import { attemptsList } from '../../tables/attempts.js';
import { intentsGet, intentsList } from '../../tables/outbox.js';
import { IntentState } from '../../model/intent-states.js';
import { storableText } from '../../text.js';
import { tenantSchema } from '../../model/hold-input.js';
import { checkTenant, expectNoBody, intentIdSchema, listingTenant, opsOf, pageQuery, parse, type ApiContext } from '../context.js';
import { access } from '../auth.js';
import type { FastifyRequest } from 'fastify';

type IdParams = { Params: { id: string } };

export const intentsListQuery = z
  .object({
    state: z.enum(Object.values(IntentState) as [IntentState, ...IntentState[]], `must be one of ${Object.values(IntentState).join(', ')}`).optional(),
    tenant: tenantSchema().optional().describe("only this tenant's intents (`?tenant=` alone: the empty tenant's)"),
    ...pageQuery,
  })
  .strict();

/** Which account to send through; Operations refuses one not in failover (400 naming `account`). */
export const moveBody = z.object({ account: storableText('must be an account name') }).strict();

export function intentRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { pool, schema } = ctx;
  /** An intent the request's token may see, else the 404 a missing one gets; checked before any change. */
  const visible = async (request: FastifyRequest, id: string) => {
    const intent = await intentsGet(pool, schema, id);
    if (intent) checkTenant(request, intent.tenant, 'intent', id);
    return intent;
  };

  app.get('/intents', access('read', 'tenant'), async (request) => {
    const query = parse(intentsListQuery, request.query);
    const scope = listingTenant(request, query.tenant);
    if (scope.empty) return { intents: [], nextCursor: null };
    return intentsList(pool, schema, {
      limit: query.limit,
      ...(query.state ? { state: query.state } : {}),
      ...(scope.tenant !== undefined ? { tenant: scope.tenant } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
  });

  app.get<IdParams>('/intents/:id', access('read', 'tenant'), async (request) => {
    const id = parse(intentIdSchema, request.params.id, 'id');
    const intent = await visible(request, id);
    if (!intent) throw new NotFoundError('intent', id);
    return { ...intent, message: await messagesSummary(pool, schema, id), attempts: await attemptsList(pool, schema, id) };
  });

  app.post<IdParams>('/intents/:id/replay', access('operate', 'tenant'), async (request) => {
    const id = parse(intentIdSchema, request.params.id, 'id');
    expectNoBody(request.body);
    await visible(request, id);
    return opsOf(request, ctx).replay(id);
  });

  // A pending intent to another account (e.g. off one that is paused or failing); refused while it is being sent or once finished (409).
  app.post<IdParams>('/intents/:id/move', access('operate', 'tenant'), async (request) => {
    const id = parse(intentIdSchema, request.params.id, 'id');
    const body = parse(moveBody, request.body);
    await visible(request, id);
    return opsOf(request, ctx).moveIntent(id, body.account);
  });
}
