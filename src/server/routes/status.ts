import type { FastifyInstance } from 'fastify';
import { readStatus } from '../../read/status.js';
import type { ApiContext } from '../context.js';
import { access } from '../auth.js';

/** Both lanes at a glance, as `leasehold status --json` prints them (the dashboard polls it). */
export function statusRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get('/status', access('read', 'fleet'), async () => readStatus(ctx.pool, ctx.schema, ctx.config, ctx.ops.accounts.failover));
}
