import { z } from 'zod';
import { cancelHold, confirmHold, createHold, extendHold, getHold } from '../../holds/holds.js';
import { sqlExpireHook, withExpireHook } from '../../holds/expire-hook.js';
import { DEFAULTS } from '../../defaults.js';
import { holdsList } from '../../tables/holds.js';
import { HoldStatus } from '../../model/hold-states.js';
import type { CreateHoldInput } from '../../model/hold-input.js';
import { holdIdSchema, tenantSchema } from '../../model/hold-input.js';
import { checkTenant, expectNoBody, listingTenant, pageQuery, type ApiContext } from '../context.js';
import { access, principalOf } from '../auth.js';
import { ApiError } from '../errors.js';
import type { FastifyRequest } from 'fastify';
import type { Queryable } from '../../db/pool.js';
import { holdTimeline } from '../../read/timeline.js';
import { answers, BAD_INPUT, json, page, type ZodApp } from '../shapes/common.js';
import { createHoldBody, extendHoldBody, HoldShape, HoldTimelineShape } from '../shapes/holds.js';

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
function scopedCreate(request: FastifyRequest, body: CreateHoldInput): CreateHoldInput {
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

/** The hold id in a path, by the rule of an id (a 400 naming `id` before any lookup). */
const idParams = () => z.object({ id: holdIdSchema() });

const NOT_FOUND = 'no such hold (or one of a tenant this token may not see)';
const NOT_HELD = 'hold_not_held: the hold already left held (error.status says where it went)';
const NOT_HELD_OR_HOOK = `${NOT_HELD}; or hook_failed: the application's LEASEHOLD_EXPIRE_HOOK raised (or ran past its timeout) for this change, and nothing changed (the message is the database's)`;

export function holdRoutes(app: ZodApp, ctx: ApiContext): void {
  const { pool, schema, logger, config } = ctx;
  // confirm, cancel and extend call the application's hook in their own transaction (holds/expire-hook.ts).
  const hook = config.expireHook
    ? { onExpired: sqlExpireHook(config.expireHook), name: config.expireHook, timeoutMs: config.expireHookTimeoutMs ?? DEFAULTS.expireHookTimeoutMs }
    : undefined;
  const defaults = {
    ...(config.remindBeforeSeconds !== undefined ? { remindBeforeSeconds: config.remindBeforeSeconds } : {}),
    ...(config.notifyOnConfirm !== undefined ? { notifyOnConfirm: config.notifyOnConfirm } : {}),
  };

  app.post(
    '/holds',
    {
      ...access('operate', 'tenant', HOLDS_UNAUDITED),
      schema: {
        summary: 'create a hold; the same id and body again answers 200 with the same hold, another body 409',
        tags: ['holds'],
        body: createHoldBody(),
        response: answers(
          {
            201: json(HoldShape, 'created (Location names it)'),
            200: json(HoldShape, 'an idempotent retry: the hold this request created before'),
          },
          { 400: BAD_INPUT, 409: 'idempotency_conflict: the id exists with a different request' },
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      // W3C Trace Context: a traceparent header is stored on the hold (one that is not valid is ignored, never refused).
      const traceparent = request.headers.traceparent;
      const { hold, created } = await createHold(pool, scopedCreate(request, request.body), {
        schema,
        defaults,
        ...(typeof traceparent === 'string' ? { traceparent } : {}),
      });
      if (created) logger.info({ event: 'hold.created', holdId: hold.id, tenant: hold.tenant, expiresAt: hold.expiresAt }, 'hold created');
      reply.header('location', `/v1/holds/${encodeURIComponent(hold.id)}`);
      return reply.code(created ? 201 : 200).send(hold);
    },
  );

  app.get(
    '/holds',
    {
      ...access('read', 'tenant'),
      schema: {
        summary: 'holds newest first, optionally of one status and one tenant, keyset-paged (pass nextCursor back as cursor)',
        tags: ['holds'],
        querystring: holdsListQuery,
        response: answers({ 200: json(page('holds', HoldShape), 'a page of holds') }, { 400: BAD_INPUT }),
      },
    },
    async (request) => {
      const query = request.query;
      const scope = listingTenant(request, query.tenant);
      if (scope.empty) return { holds: [], nextCursor: null };
      return holdsList(pool, schema, {
        limit: query.limit,
        ...(query.status ? { status: query.status } : {}),
        ...(scope.tenant !== undefined ? { tenant: scope.tenant } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
    },
  );

  app.get(
    '/holds/:id',
    {
      ...access('read', 'tenant'),
      schema: {
        summary: 'the hold and its whole life: every email, attempt, provider event and extension, and the five moments of its expiry email',
        tags: ['holds'],
        params: idParams(),
        response: answers({ 200: json(HoldTimelineShape, 'the hold and its timeline') }, { 400: BAD_INPUT, 404: NOT_FOUND }),
      },
    },
    async (request) => {
      const timeline = await holdTimeline(pool, schema, request.params.id);
      checkTenant(request, timeline.hold.tenant, 'hold', timeline.hold.id);
      return timeline;
    },
  );

  app.post(
    '/holds/:id/confirm',
    {
      ...access('operate', 'tenant', HOLDS_UNAUDITED),
      schema: {
        summary: 'held -> confirmed (its pending reminder is voided; a confirmation email when the hold asked for one)',
        tags: ['holds'],
        params: idParams(),
        response: answers({ 200: json(HoldShape, 'confirmed') }, { 400: BAD_INPUT, 404: NOT_FOUND, 409: NOT_HELD_OR_HOOK }, { body: true }),
      },
    },
    async (request) => {
      const { id } = request.params;
      expectNoBody(request.body);
      await visibleHold(request, pool, schema, id);
      const hold = await withExpireHook(pool, schema, hook, (db) => confirmHold(db, id, { schema, noticeDeadlineSeconds: config.noticeDeadlineSeconds ?? null }));
      logger.info({ event: 'hold.confirmed', holdId: hold.id }, 'hold confirmed');
      return hold;
    },
  );

  app.post(
    '/holds/:id/cancel',
    {
      ...access('operate', 'tenant', HOLDS_UNAUDITED),
      schema: {
        summary: 'held -> cancelled (no email is sent; its pending reminder is voided)',
        tags: ['holds'],
        params: idParams(),
        response: answers({ 200: json(HoldShape, 'cancelled') }, { 400: BAD_INPUT, 404: NOT_FOUND, 409: NOT_HELD_OR_HOOK }, { body: true }),
      },
    },
    async (request) => {
      const { id } = request.params;
      expectNoBody(request.body);
      await visibleHold(request, pool, schema, id);
      const hold = await withExpireHook(pool, schema, hook, (db) => cancelHold(db, id, { schema }));
      logger.info({ event: 'hold.cancelled', holdId: hold.id }, 'hold cancelled');
      return hold;
    },
  );

  app.post(
    '/holds/:id/extend',
    {
      ...access('operate', 'tenant', HOLDS_UNAUDITED),
      schema: {
        summary: "move a held hold's deadline later ({ expiresAt } or { ttlSeconds } from now); the same deadline again is a no-op; its pending reminder moves with it",
        tags: ['holds'],
        params: idParams(),
        body: extendHoldBody(),
        response: answers({ 200: json(HoldShape, 'extended (or already at that deadline)') }, { 400: BAD_INPUT, 404: NOT_FOUND, 409: NOT_HELD_OR_HOOK }, { body: true }),
      },
    },
    async (request) => {
      const { id } = request.params;
      await visibleHold(request, pool, schema, id);
      const hold = await withExpireHook(pool, schema, hook, (db) => extendHold(db, id, request.body, { schema }));
      logger.info({ event: 'hold.extended', holdId: hold.id, expiresAt: hold.expiresAt }, 'hold extended');
      return hold;
    },
  );
}
