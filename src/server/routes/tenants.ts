import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { NotFoundError } from '../../errors.js';
import { tenantSchema } from '../../model/hold-input.js';
import { tenantPolicySchema } from '../../model/tenant-policy.js';
import { checkTenant, opsOf, pageQuery, type ApiContext } from '../context.js';
import { access } from '../auth.js';
import { answers, BAD_INPUT, json, noContent, type ZodApp } from '../shapes/common.js';
import { TenantPauseShape, TenantPoliciesShape, TenantPolicyShape } from '../shapes/tenants.js';

export const tenantPoliciesListQuery = z
  .object({
    ...pageQuery,
    top: z.coerce
      .number({ error: 'must be a whole number from 1 to 1000' })
      .int('must be a whole number from 1 to 1000')
      .min(1, 'must be a whole number from 1 to 1000')
      .max(1000, 'must be a whole number from 1 to 1000')
      .default(20)
      .describe('how many of the tenants with email waiting to list, largest backlog first'),
  })
  .strict();

export const tenantPauseBody = z
  .object({ reason: z.string({ error: 'must be a string' }).optional().describe('why (default: paused by an operator); a pause in force keeps its first reason') })
  .strict();

/** The path's tenant by the tenant rule (a 400 naming `tenant`); the empty tenant is the path with nothing after the slash. */
const tenantParams = z.object({ tenant: tenantSchema().describe('the tenant; the empty tenant is /v1/tenants/ (nothing after the slash)') });
const NO_POLICY = 'the tenant has no policy';
const NOT_YOURS = ' (or it is a tenant this token may not see)';

/**
 * `/v1/tenants` (bearer-authenticated like all of /v1): each tenant's
 * policy (cap, weight, account, sender), through the same Operations as
 * `leasehold tenants`. The empty tenant is `/v1/tenants/` (nothing after
 * the slash), as `?tenant=` names it on the listings; a tenant that breaks
 * the tenant rule is a 400 naming `tenant`. The body's `account` must be a
 * configured account (400 naming `account`).
 */
export function tenantRoutes(app: ZodApp, ctx: ApiContext): void {
  const { ops } = ctx;
  /** The path's tenant, when the request's token may reach it; another tenant is a 404. */
  const ownTenant = (request: FastifyRequest, tenant: string) => {
    checkTenant(request, tenant, 'tenant', tenant);
    return tenant;
  };

  app.get(
    '/tenants',
    {
      ...access('read', 'fleet'),
      schema: {
        summary:
          'every tenant policy, by tenant (the empty tenant first), keyset-paged (pass nextCursor back as cursor); and the `top` tenants with email waiting, largest backlog first',
        tags: ['tenants'],
        querystring: tenantPoliciesListQuery,
        response: answers({ 200: json(TenantPoliciesShape, 'a page of policies, and the largest backlogs') }, { 400: BAD_INPUT }),
      },
    },
    async (request) => {
      const query = request.query;
      const page = await ops.tenants.policies({ limit: query.limit, ...(query.cursor ? { cursor: query.cursor } : {}) });
      // The tenants with email waiting, largest backlog first (`top`, default 20).
      return { ...page, backlog: await ops.tenants.backlog(query.top) };
    },
  );

  app.post(
    '/tenants/:tenant/pause',
    {
      ...access('operate', 'tenant'),
      schema: {
        summary: 'pause one tenant: its intents stay pending and no round leases them until it is resumed; the others go on',
        tags: ['tenants'],
        params: tenantParams,
        body: tenantPauseBody.nullish(),
        response: answers(
          { 200: json(TenantPauseShape, 'paused (a pause in force keeps its first reason)') },
          { 400: BAD_INPUT, 404: 'a tenant this token may not see' },
          { body: true },
        ),
      },
    },
    async (request) => {
      const tenant = ownTenant(request, request.params.tenant);
      const reason = request.body?.reason;
      return opsOf(request, ctx).tenants.pause(tenant, ...(reason !== undefined ? [reason] : []));
    },
  );

  app.post(
    '/tenants/:tenant/resume',
    {
      ...access('operate', 'tenant'),
      schema: {
        summary: 'resume one tenant',
        tags: ['tenants'],
        params: tenantParams,
        response: answers({ 200: json(TenantPauseShape, 'resumed') }, { 400: BAD_INPUT, 404: `the tenant was not paused${NOT_YOURS}` }, { body: true }),
      },
    },
    async (request) => opsOf(request, ctx).tenants.resume(ownTenant(request, request.params.tenant)),
  );

  app.get(
    '/tenants/:tenant',
    {
      ...access('read', 'tenant'),
      schema: {
        summary: "a tenant's policy: its weight, cap, account and sender, as the delivery lane applies them",
        tags: ['tenants'],
        params: tenantParams,
        response: answers({ 200: json(TenantPolicyShape, 'the policy') }, { 400: BAD_INPUT, 404: `${NO_POLICY}${NOT_YOURS}` }),
      },
    },
    async (request) => {
      const tenant = ownTenant(request, request.params.tenant);
      const policy = await ops.tenants.policy(tenant);
      if (!policy) throw new NotFoundError('tenant policy', tenant);
      return policy;
    },
  );

  app.put(
    '/tenants/:tenant',
    {
      ...access('admin', 'fleet'),
      schema: {
        summary:
          "set a tenant's policy as a whole (fields left out are not set; {} or no body is no cap, weight 1); burst needs perSecond and defaults to it rounded up",
        tags: ['tenants'],
        params: tenantParams,
        body: tenantPolicySchema().optional(),
        response: answers(
          { 201: json(TenantPolicyShape, 'created (Location names it)'), 200: json(TenantPolicyShape, 'replaced') },
          { 400: BAD_INPUT },
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const { tenant } = request.params;
      const { policy, created } = await opsOf(request, ctx).tenants.setPolicy(tenant, request.body ?? {});
      if (created) reply.header('location', `/v1/tenants/${encodeURIComponent(tenant)}`);
      return reply.code(created ? 201 : 200).send(policy);
    },
  );

  app.delete(
    '/tenants/:tenant',
    {
      ...access('admin', 'fleet'),
      schema: {
        summary: "remove a tenant's policy (it then shares its account with no cap)",
        tags: ['tenants'],
        params: tenantParams,
        response: answers({ 204: noContent('removed') }, { 400: BAD_INPUT, 404: NO_POLICY }, { body: true }),
      },
    },
    async (request, reply) => {
      await opsOf(request, ctx).tenants.deletePolicy(request.params.tenant);
      return reply.code(204).send();
    },
  );
}
