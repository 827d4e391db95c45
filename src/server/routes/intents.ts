import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { NotFoundError } from '../../errors.js';
import { messagesSummary } from '../../tables/messages.js';
import { attemptsList } from '../../tables/attempts.js';
import { intentsGet, intentsList } from '../../tables/outbox.js';
import { IntentState } from '../../model/intent-states.js';
import { storableText } from '../../text.js';
import { tenantSchema } from '../../model/hold-input.js';
import { expectNoBody, intentIdSchema, pageQuery, parse, type ApiContext } from '../context.js';

type IdParams = { Params: { id: string } };

export const intentsListQuery = z
  .object({
    state: z.enum(Object.values(IntentState) as [IntentState, ...IntentState[]], 'must be one of pending, sent, rejected, dead').optional(),
    tenant: tenantSchema().optional().describe("only this tenant's intents (`?tenant=` alone: the empty tenant's)"),
    ...pageQuery,
  })
  .strict();

/** Which account to send through; Operations refuses one not in failover (400 naming `account`). */
export const moveBody = z.object({ account: storableText('must be an account name') }).strict();

export function intentRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { pool, schema } = ctx;

  app.get('/intents', async (request) => {
    const query = parse(intentsListQuery, request.query);
    return intentsList(pool, schema, {
      limit: query.limit,
      ...(query.state ? { state: query.state } : {}),
      ...(query.tenant !== undefined ? { tenant: query.tenant } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
  });

  app.get<IdParams>('/intents/:id', async (request) => {
    const id = parse(intentIdSchema, request.params.id, 'id');
    const intent = await intentsGet(pool, schema, id);
    if (!intent) throw new NotFoundError('intent', id);
    return { ...intent, message: await messagesSummary(pool, schema, id), attempts: await attemptsList(pool, schema, id) };
  });

  app.post<IdParams>('/intents/:id/replay', async (request) => {
    const id = parse(intentIdSchema, request.params.id, 'id');
    expectNoBody(request.body);
    return ctx.ops.replay(id);
  });

  // A pending intent to another account (e.g. off one that is paused or failing); refused while it is being sent or once finished (409).
  app.post<IdParams>('/intents/:id/move', async (request) => {
    const id = parse(intentIdSchema, request.params.id, 'id');
    const body = parse(moveBody, request.body);
    return ctx.ops.moveIntent(id, body.account);
  });
}
