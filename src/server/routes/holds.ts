import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { cancelHold, confirmHold, createHold, extendHold, getHold } from '../../holds/holds.js';
import { holdsList } from '../../tables/holds.js';
import { HoldStatus } from '../../model/hold-states.js';
import type { CreateHoldInput, ExtendHoldInput } from '../../model/hold-input.js';
import { tenantSchema, validateHoldId } from '../../model/hold-input.js';
import { checkTenant, expectNoBody, listingTenant, pageQuery, parse, type ApiContext } from '../context.js';
import { access, principalOf } from '../auth.js';
import { ApiError } from '../errors.js';
import type { FastifyRequest } from 'fastify';
import type { Queryable } from '../../db/pool.js';
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

/** Why the hold routes write no audit entry: application traffic, whose history is the hold's own row and timeline. */
export const HOLDS_UNAUDITED = "application traffic: a hold's history is its own row and timeline (GET /v1/holds/:id)";

/**
 * A token limited to tenants creates holds for them only: the body's
 * `tenant`, or its only tenant when the body names none. (Hold ids are
 * global: an id another tenant took is still a 409, so such a client
 * should let the server generate ids or prefix its own.)
 */
function scopedCreate(request: FastifyRequest): CreateHoldInput {
  const body = request.body as CreateHoldInput;
  const { name, tenants } = principalOf(request);
  if (tenants === null || body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const tenant = (body as { tenant?: unknown }).tenant;
  if (tenant === undefined && tenants.length === 1) return { ...body, tenant: tenants[0]! };
  if (typeof tenant === 'string' && tenants.includes(tenant)) return body;
  throw new ApiError(403, 'forbidden', `token ${name} may create holds only for tenants ${tenants.join(', ')}`, 'tenant');
}

/** A hold the request's token may see, else the 404 a missing one gets; before any change is made. */
export async function visibleHold(request: FastifyRequest, db: Queryable, schema: string, id: string): Promise<void> {
  const hold = await getHold(db, id, { schema });
  if (hold) checkTenant(request, hold.tenant, 'hold', id);
}

export function holdRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { pool, schema, logger, config } = ctx;
  const defaults = {
    ...(config.remindBeforeSeconds !== undefined ? { remindBeforeSeconds: config.remindBeforeSeconds } : {}),
    ...(config.notifyOnConfirm !== undefined ? { notifyOnConfirm: config.notifyOnConfirm } : {}),
  };

  app.post('/holds', access('operate', 'tenant', HOLDS_UNAUDITED), async (request, reply) => {
    // W3C Trace Context: a traceparent header is stored on the hold (one that is not valid is ignored, never refused).
    const traceparent = request.headers.traceparent;
    const { hold, created } = await createHold(pool, scopedCreate(request), {
      schema,
      defaults,
      ...(typeof traceparent === 'string' ? { traceparent } : {}),
    });
    if (created) logger.info({ event: 'hold.created', holdId: hold.id, tenant: hold.tenant, expiresAt: hold.expiresAt }, 'hold created');
    reply.header('location', `/v1/holds/${encodeURIComponent(hold.id)}`);
    return reply.code(created ? 201 : 200).send(hold);
  });

  app.get('/holds', access('read', 'tenant'), async (request) => {
    const query = parse(holdsListQuery, request.query);
    const scope = listingTenant(request, query.tenant);
    if (scope.empty) return { holds: [], nextCursor: null };
    return holdsList(pool, schema, {
      limit: query.limit,
      ...(query.status ? { status: query.status } : {}),
      ...(scope.tenant !== undefined ? { tenant: scope.tenant } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
  });

  app.get<IdParams>('/holds/:id', access('read', 'tenant'), async (request) => {
    const timeline = await holdTimeline(pool, schema, validateHoldId(request.params.id));
    checkTenant(request, timeline.hold.tenant, 'hold', timeline.hold.id);
    return timeline;
  });

  app.post<IdParams>('/holds/:id/confirm', access('operate', 'tenant', HOLDS_UNAUDITED), async (request) => {
    const id = validateHoldId(request.params.id);
    expectNoBody(request.body);
    await visibleHold(request, pool, schema, id);
    const hold = await confirmHold(pool, id, { schema, noticeDeadlineSeconds: config.noticeDeadlineSeconds ?? null });
    logger.info({ event: 'hold.confirmed', holdId: hold.id }, 'hold confirmed');
    return hold;
  });

  app.post<IdParams>('/holds/:id/cancel', access('operate', 'tenant', HOLDS_UNAUDITED), async (request) => {
    const id = validateHoldId(request.params.id);
    expectNoBody(request.body);
    await visibleHold(request, pool, schema, id);
    const hold = await cancelHold(pool, id, { schema });
    logger.info({ event: 'hold.cancelled', holdId: hold.id }, 'hold cancelled');
    return hold;
  });

  app.post<IdParams>('/holds/:id/extend', access('operate', 'tenant', HOLDS_UNAUDITED), async (request) => {
    const id = validateHoldId(request.params.id);
    await visibleHold(request, pool, schema, id);
    const hold = await extendHold(pool, id, request.body as ExtendHoldInput, { schema });
    logger.info({ event: 'hold.extended', holdId: hold.id, expiresAt: hold.expiresAt }, 'hold extended');
    return hold;
  });
}
