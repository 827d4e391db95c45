import { z } from 'zod';
import { AUDIT_ACTIONS, type AuditAction } from '../../model/audit-actions.js';
import { auditList } from '../../tables/audit-log.js';
import { access, principalOf } from '../auth.js';
import { pageQuery, type ApiContext } from '../context.js';
import { answers, BAD_INPUT, json, Timestamp, type ZodApp } from '../shapes/common.js';
import { AuditPageShape, TokenShape } from '../shapes/audit.js';

export const auditListQuery = z
  .object({
    since: Timestamp.optional().describe('only entries at or after this time'),
    action: z.enum(AUDIT_ACTIONS as [AuditAction, ...AuditAction[]], `must be one of ${AUDIT_ACTIONS.join(', ')}`).optional(),
    ...pageQuery,
  })
  .strict();

/**
 * The audit log, newest first (`GET /v1/audit?since=&action=&limit=&cursor=`),
 * and `GET /v1/token`: the calling token's name, role and tenants, which
 * the dashboard reads to hide the controls a read token may not use.
 */
export function auditRoutes(app: ZodApp, ctx: ApiContext): void {
  app.get(
    '/audit',
    {
      ...access('read', 'fleet'),
      schema: {
        summary:
          'the audit log, newest first: who changed what (pause, rate limits, replay, suppressions, erasure, retention runs, tenant policy, refused tokens), with the values before and after',
        tags: ['operations'],
        querystring: auditListQuery,
        response: answers({ 200: json(AuditPageShape, 'a page of entries') }, { 400: BAD_INPUT }),
      },
    },
    async (request) => {
      const query = request.query;
      return auditList(ctx.pool, ctx.schema, {
        limit: query.limit,
        ...(query.since ? { since: query.since } : {}),
        ...(query.action ? { action: query.action } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
    },
  );

  app.get(
    '/token',
    {
      ...access('read', 'any'),
      schema: {
        summary: "the calling token's name, role (read, operate, admin) and tenants (null: every tenant)",
        tags: ['operations'],
        response: answers({ 200: json(TokenShape, 'the calling token') }),
      },
    },
    async (request) => {
      const { name, role, tenants } = principalOf(request);
      return { name, role, tenants };
    },
  );
}
