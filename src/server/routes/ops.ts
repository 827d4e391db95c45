import type { Registry } from 'prom-client';
import { z } from 'zod';
import { checkHealth } from '../../read/health.js';
import type { ApiContext } from '../context.js';
import { ErrorBody, json, openAnswers, type ZodApp } from '../shapes/common.js';
import { HealthReportShape } from '../shapes/health.js';

/** Open routes (no token): health for load balancers, metrics for Prometheus. */
export function opsRoutes(app: ZodApp, ctx: ApiContext, registries: Registry[]): void {
  app.get(
    '/healthz',
    {
      schema: {
        summary: 'health: 200 ok or degraded (an account paused, the others sending), 503 unavailable with reasons (database away, an oldest age past its promise, delivery paused, a lane stalled)',
        tags: ['operations'],
        security: [],
        response: {
          ...openAnswers({ 200: json(HealthReportShape, 'ok, or degraded: delivery goes on through the other accounts') }),
          // The report itself; or, while this server shuts down, the one error shape (code shutting_down).
          503: json(z.union([HealthReportShape, ErrorBody]), 'unavailable, with reasons; or shutting_down in the Error shape while this server stops'),
        },
      },
    },
    async (_request, reply) => {
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
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        summary: "Prometheus text format: this process's counters, then the database gauges every instance shares",
        tags: ['operations'],
        security: [],
        response: openAnswers({ 200: { description: 'metrics', content: { 'text/plain': { schema: z.string() } } } }),
      },
    },
    async (_request, reply) => {
      // Process-local counters, then the database gauges shared by all instances.
      const texts = await Promise.all(registries.map((registry) => registry.metrics()));
      return reply.type(registries[0]!.contentType).send(texts.join('\n'));
    },
  );
}
