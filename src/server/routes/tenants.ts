import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { NotFoundError } from '../../errors.js';
import { tenantSchema } from '../../model/hold-input.js';
import { pageQuery, parse, type ApiContext } from '../context.js';

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
export function tenantRoutes(app: FastifyInstance, { ops }: ApiContext): void {
  const tenantOf = (params: TenantParams['Params']) => parse(tenantSchema(), params.tenant, 'tenant');

  app.get('/tenants', async (request) => {
    const query = parse(tenantPoliciesListQuery, request.query);
    const page = await ops.tenantPolicies({ limit: query.limit, ...(query.cursor ? { cursor: query.cursor } : {}) });
    // The tenants with email waiting, largest backlog first (`top`, default 20).
    return { ...page, backlog: await ops.tenantsBacklog(query.top) };
  });

  app.post<TenantParams>('/tenants/:tenant/pause', async (request) => {
    const tenant = tenantOf(request.params);
    const body = parse(tenantPauseBody, request.body ?? {});
    return ops.pauseTenant(tenant, ...(body.reason !== undefined ? [body.reason] : []));
  });

  app.post<TenantParams>('/tenants/:tenant/resume', async (request) => {
    return ops.resumeTenant(tenantOf(request.params));
  });

  app.get<TenantParams>('/tenants/:tenant', async (request) => {
    const tenant = tenantOf(request.params);
    const policy = await ops.tenantPolicy(tenant);
    if (!policy) throw new NotFoundError('tenant policy', tenant);
    return policy;
  });

  app.put<TenantParams>('/tenants/:tenant', async (request, reply) => {
    const tenant = tenantOf(request.params);
    const { policy, created } = await ops.setTenantPolicy(tenant, request.body ?? {});
    if (created) reply.header('location', `/v1/tenants/${encodeURIComponent(tenant)}`);
    return reply.code(created ? 201 : 200).send(policy);
  });

  app.delete<TenantParams>('/tenants/:tenant', async (request, reply) => {
    const tenant = tenantOf(request.params);
    await ops.deleteTenantPolicy(tenant);
    return reply.code(204).send();
  });
}
