import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { checkHealth } from '../../read/health.js';
import type { ApiContext } from '../context.js';

/** Open routes (no token): health for load balancers, metrics for Prometheus. */
export function opsRoutes(app: FastifyInstance, ctx: ApiContext, registries: Registry[]): void {
  app.get('/healthz', async (_request, reply) => {
    const report = await checkHealth({
      db: ctx.pool,
      schema: ctx.schema,
      promises: ctx.config,
      logger: ctx.logger,
      lanes: ctx.metrics.laneRounds(),
      failover: ctx.ops.accounts.failover,
    });
    // Degraded (an account paused, the others sending) still serves: 200.
    return reply.code(report.status === 'unavailable' ? 503 : 200).send(report);
  });

  app.get('/metrics', async (_request, reply) => {
    // Process-local counters, then the database gauges shared by all instances.
    const texts = await Promise.all(registries.map((registry) => registry.metrics()));
    return reply.type(registries[0]!.contentType).send(texts.join('\n'));
  });
}
