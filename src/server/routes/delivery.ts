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
} from '../../delivery/control.js';
import { storableText } from '../../text.js';
import { expectNoBody, parse, type ApiContext } from '../context.js';

/** The CLI's `pause --for` takes the same range (secondsArg). */
const MAX_PAUSE_SECONDS = 31_536_000;

export const pauseBody = z
  .object({
    reason: storableText().trim().min(1, 'must not be empty').max(500, 'must be at most 500 characters').optional(),
    /** Like the CLI's `pause --for`: the pause lifts by itself after this long. */
    forSeconds: z
      .number('must be a number of seconds')
      .gt(0, 'must be greater than 0')
      .max(MAX_PAUSE_SECONDS, `must be at most ${MAX_PAUSE_SECONDS} (a year)`)
      .optional(),
  })
  .strict()
  .optional()
  .nullable();

/** Either field alone keeps the other half of the current policy, as `leasehold rate-limit` does. */
export const policyBody = z
  .object({ perSecond: z.number('must be a number').optional(), burst: z.number('must be a number').optional() })
  .strict()
  .refine((body) => body.perSecond !== undefined || body.burst !== undefined, { message: 'give perSecond, burst or both', path: ['perSecond'] });

export function deliveryRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { pool, schema, logger, config } = ctx;

  app.get('/delivery', async () => deliveryControlGet(pool, schema));

  app.post('/delivery/pause', async (request) => {
    const body = parse(pauseBody, request.body);
    const reason = body?.reason ?? 'paused by an operator';
    const delivery = await deliveryPause(pool, schema, {
      reason,
      by: 'operator',
      ...(body?.forSeconds !== undefined ? { untilMs: body.forSeconds * 1000 } : {}),
    });
    logger.info({ event: 'delivery.paused', reason, by: 'operator', forSeconds: body?.forSeconds ?? null }, 'delivery paused');
    return delivery;
  });

  app.post('/delivery/resume', async (request) => {
    expectNoBody(request.body);
    const delivery = await deliveryResume(pool, schema);
    logger.info({ event: 'delivery.resumed', by: 'operator' }, 'delivery resumed');
    return delivery;
  });

  const currentLimiter = async () => {
    let limiter = await rateLimiterGet(pool, schema);
    if (!limiter) {
      // No worker has started yet: the configured initial policy applies.
      await rateLimiterEnsure(pool, schema, { perSecond: config.ratePerSecond, burst: config.rateBurst });
      limiter = (await rateLimiterGet(pool, schema))!;
    }
    return limiter;
  };

  app.get('/rate-limit', async () => currentLimiter());

  app.put('/rate-limit', async (request) => {
    const body = parse(policyBody, request.body);
    const current = body.perSecond === undefined || body.burst === undefined ? await currentLimiter() : undefined;
    const policy = validatePolicy({ perSecond: body.perSecond ?? current!.perSecond, burst: body.burst ?? current!.burst });
    const rateLimit = await rateLimiterSet(pool, schema, policy);
    logger.info({ event: 'rate_limit.changed', perSecond: policy.perSecond, burst: policy.burst }, 'rate limit changed');
    return rateLimit;
  });
}
