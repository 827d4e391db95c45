import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { attemptsPerSecond, SEND_RATE_MAX_SECONDS } from '../../tables/attempts.js';
import { parse, type ApiContext } from '../context.js';
import { access } from '../auth.js';

export const sendRateQuery = z
  .object({
    seconds: z.coerce
      .number('must be a number')
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(SEND_RATE_MAX_SECONDS, `must be at most ${SEND_RATE_MAX_SECONDS}`)
      .default(600),
  })
  .strict();

/**
 * Sends per second by outcome over the last `seconds`, counted where the
 * limiter counts them: what the dashboard's send chart draws against the limit.
 */
export function sendRateRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get('/status/sends', access('read', 'fleet'), async (request) => attemptsPerSecond(ctx.pool, ctx.schema, parse(sendRateQuery, request.query).seconds));
}
