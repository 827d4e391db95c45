import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  deliveryControlGet,
  deliveryPause,
  deliveryResume,
  rateLimiterEnsure,
  rateLimiterGet,
  rateLimiterSet,
  validatePolicy,
} from '../../tables/delivery-control.js';
import { storableText } from '../../text.js';
import { expectNoBody, parse, type ApiContext } from '../context.js';

const pauseBody = z
  .object({ reason: storableText().trim().min(1, 'must not be empty').max(500, 'must be at most 500 characters').optional() })
  .strict()
  .optional()
  .nullable();

const policyBody = z.object({ perSecond: z.number('must be a number'), burst: z.number('must be a number') }).strict();

export function deliveryRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { pool, schema, logger, config } = ctx;

  app.get('/delivery', async () => deliveryControlGet(pool, schema));

  app.post('/delivery/pause', async (request) => {
    const body = parse(pauseBody, request.body);
    const reason = body?.reason ?? 'paused by an operator';
    const delivery = await deliveryPause(pool, schema, { reason, by: 'operator' });
    logger.info({ event: 'delivery.paused', reason, by: 'operator' }, 'delivery paused');
    return delivery;
  });

  app.post('/delivery/resume', async (request) => {
    expectNoBody(request.body);
    const delivery = await deliveryResume(pool, schema);
    logger.info({ event: 'delivery.resumed', by: 'operator' }, 'delivery resumed');
    return delivery;
  });

  app.get('/rate-limit', async () => {
    let limiter = await rateLimiterGet(pool, schema);
    if (!limiter) {
      // No worker has started yet: the configured initial policy applies.
      await rateLimiterEnsure(pool, schema, { perSecond: config.ratePerSecond, burst: config.rateBurst });
      limiter = (await rateLimiterGet(pool, schema))!;
    }
    return limiter;
  });

  app.put('/rate-limit', async (request) => {
    const policy = validatePolicy(parse(policyBody, request.body));
    const rateLimit = await rateLimiterSet(pool, schema, policy);
    logger.info({ event: 'rate_limit.changed', perSecond: policy.perSecond, burst: policy.burst }, 'rate limit changed');
    return rateLimit;
  });
}
