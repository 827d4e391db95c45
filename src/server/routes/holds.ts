import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { cancelHold, confirmHold, createHold } from '../../holds/holds.js';
import { holdsList } from '../../tables/holds.js';
import { HoldStatus } from '../../model/hold-states.js';
import type { CreateHoldInput } from '../../model/hold-input.js';
import { tenantSchema, validateHoldId } from '../../model/hold-input.js';
import { expectNoBody, pageQuery, parse, type ApiContext } from '../context.js';
import { holdTimeline } from '../../read/timeline.js';

type IdParams = { Params: { id: string } };

const STATUSES = Object.values(HoldStatus) as [HoldStatus, ...HoldStatus[]];

export const holdsListQuery = z
  .object({
    status: z.enum(STATUSES, `must be one of ${STATUSES.join(', ')}`).optional(),
    tenant: tenantSchema().optional().describe("only this tenant's holds (`?tenant=` alone: the empty tenant's)"),
    ...pageQuery,
  })
  .strict();

export function holdRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { pool, schema, logger } = ctx;

  app.post('/holds', async (request, reply) => {
    const { hold, created } = await createHold(pool, request.body as CreateHoldInput, { schema });
    if (created) logger.info({ event: 'hold.created', holdId: hold.id, tenant: hold.tenant, expiresAt: hold.expiresAt }, 'hold created');
    reply.header('location', `/v1/holds/${encodeURIComponent(hold.id)}`);
    return reply.code(created ? 201 : 200).send(hold);
  });

  app.get('/holds', async (request) => {
    const query = parse(holdsListQuery, request.query);
    return holdsList(pool, schema, {
      limit: query.limit,
      ...(query.status ? { status: query.status } : {}),
      ...(query.tenant !== undefined ? { tenant: query.tenant } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
  });

  app.get<IdParams>('/holds/:id', async (request) => {
    return holdTimeline(pool, schema, validateHoldId(request.params.id));
  });

  app.post<IdParams>('/holds/:id/confirm', async (request) => {
    const id = validateHoldId(request.params.id);
    expectNoBody(request.body);
    const hold = await confirmHold(pool, id, { schema });
    logger.info({ event: 'hold.confirmed', holdId: hold.id }, 'hold confirmed');
    return hold;
  });

  app.post<IdParams>('/holds/:id/cancel', async (request) => {
    const id = validateHoldId(request.params.id);
    expectNoBody(request.body);
    const hold = await cancelHold(pool, id, { schema });
    logger.info({ event: 'hold.cancelled', holdId: hold.id }, 'hold cancelled');
    return hold;
  });
}
