import { readStatus } from '../../read/status.js';
import type { ApiContext } from '../context.js';
import { access } from '../auth.js';
import { answers, json, type ZodApp } from '../shapes/common.js';
import { StatusReportShape } from '../shapes/status.js';

/** Both lanes at a glance, as `leasehold status --json` prints them (the dashboard polls it). */
export function statusRoutes(app: ZodApp, ctx: ApiContext): void {
  app.get(
    '/status',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: 'both lanes at a glance (what `leasehold status --json` prints): backlog, due holds, oldest ages, pauses, limiters and recent sends',
        tags: ['operations'],
        response: answers({ 200: json(StatusReportShape, 'status') }),
      },
    },
    async () => readStatus(ctx.pool, ctx.schema, ctx.config, ctx.ops.accounts.failover),
  );
}
