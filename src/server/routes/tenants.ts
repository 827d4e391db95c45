import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { NotFoundError } from '../../errors.js';
import { tenantSchema } from '../../model/hold-input.js';
import { checkTenant, opsOf, pageQuery, parse, type ApiContext } from '../context.js';
import { access } from '../auth.js';

type TenantParams = { Params: { tenant: string } };

export const tenantPoliciesListQuery = z
  .object({
    ...pageQuery,
    top: z.coerce.number({ error: 'must be a whole number from 1 to 1000' }).int('must be a whole number from 1 to 1000').min(1, 'must be a whole number from 1 to 1000').max(1000, 'must be a whole number from 1 to 1000').default(20),
  })
  .strict();

export const tenantPauseBody = z.object({ reason: z.string({ error: 'must be a string' }).optional() }).strict();

/**
 * `/v1/tenants` (bearer-authenticated like all of /v1): each tenant's
 * policy (cap, weight, account, sender), through the same Operations as
 * `leasehold tenants`. The empty tenant is `/v1/tenants/` (nothing after
 * the slash), as `?tenant=` names it on the listings; a tenant that breaks
 * the tenant rule is a 400 naming `tenant`. The body's `account` must be a
 * configured account (400 naming `account`).
 */
export function tenantRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { ops } = ctx;
  const tenantOf = (params: TenantParams['Params']) => parse(tenantSchema(), params.tenant, 'tenant');
  /** The path's tenant, when the request's token may reach it; another tenant is a 404. */
  const ownTenant = (request: import('fastify').FastifyRequest<TenantParams>) => {
    const tenant = tenantOf(request.params);
    checkTenant(request, tenant, 'tenant', tenant);
    return tenant;
  };

  app.get('/tenants', access('read', 'fleet'), async (request) => {
    const query = parse(tenantPoliciesListQuery, request.query);
    const page = await ops.tenantPolicies({ limit: query.limit, ...(query.cursor ? { cursor: query.cursor } : {}) });
    // The tenants with email waiting, largest backlog first (`top`, default 20).
    return { ...page, backlog: await ops.tenantsBacklog(query.top) };
  });

  app.post<TenantParams>('/tenants/:tenant/pause', access('operate', 'tenant'), async (request) => {
    const tenant = ownTenant(request);
    const body = parse(tenantPauseBody, request.body ?? {});
    return opsOf(request, ctx).pauseTenant(tenant, ...(body.reason !== undefined ? [body.reason] : []));
  });

  app.post<TenantParams>('/tenants/:tenant/resume', access('operate', 'tenant'), async (request) => {
    return opsOf(request, ctx).resumeTenant(ownTenant(request));
  });

  app.get<TenantParams>('/tenants/:tenant', access('read', 'tenant'), async (request) => {
    const tenant = ownTenant(request);
    const policy = await ops.tenantPolicy(tenant);
    if (!policy) throw new NotFoundError('tenant policy', tenant);
    return policy;
  });

  app.put<TenantParams>('/tenants/:tenant', access('admin', 'fleet'), async (request, reply) => {
    const tenant = tenantOf(request.params);
    const { policy, created } = await opsOf(request, ctx).setTenantPolicy(tenant, request.body ?? {});
    if (created) reply.header('location', `/v1/tenants/${encodeURIComponent(tenant)}`);
    return reply.code(created ? 201 : 200).send(policy);
  });

  app.delete<TenantParams>('/tenants/:tenant', access('admin', 'fleet'), async (request, reply) => {
    const tenant = tenantOf(request.params);
    await opsOf(request, ctx).deleteTenantPolicy(tenant);
    return reply.code(204).send();
  });
}
