import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { AUDIT_ACTIONS, type AuditAction } from '../../model/audit-actions.js';
import { auditList } from '../../tables/audit-log.js';
import { access, principalOf } from '../auth.js';
import { pageQuery, parse, type ApiContext } from '../context.js';

export const auditListQuery = z
  .object({
    since: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time, e.g. 2026-05-04T10:00:00Z' }).optional().describe('only entries at or after this time'),
    action: z.enum(AUDIT_ACTIONS as [AuditAction, ...AuditAction[]], `must be one of ${AUDIT_ACTIONS.join(', ')}`).optional(),
    ...pageQuery,
  })
  .strict();

/**
 * The audit log, newest first (`GET /v1/audit?since=&action=&limit=&cursor=`),
 * and `GET /v1/token`: the calling token's name, role and tenants, which
 * the dashboard reads to hide the controls a read token may not use.
 */
export function auditRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get('/audit', access('read', 'fleet'), async (request) => {
    const query = parse(auditListQuery, request.query);
    return auditList(ctx.pool, ctx.schema, {
      limit: query.limit,
      ...(query.since ? { since: new Date(query.since) } : {}),
      ...(query.action ? { action: query.action } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
  });

  app.get('/token', access('read', 'any'), async (request) => {
    const { name, role, tenants } = principalOf(request);
    return { name, role, tenants };
  });
}
