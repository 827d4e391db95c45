import { z } from 'zod';
import { attemptsPerSecond, SEND_RATE_MAX_SECONDS } from '../../tables/attempts.js';
import type { ApiContext } from '../context.js';
import { access } from '../auth.js';
import { answers, BAD_INPUT, json, type ZodApp } from '../shapes/common.js';
import { SendRateShape } from '../shapes/status.js';

export const sendRateQuery = z
  .object({
    seconds: z.coerce
      .number('must be a number')
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(SEND_RATE_MAX_SECONDS, `must be at most ${SEND_RATE_MAX_SECONDS}`)
      .default(600)
      .describe('how far back, in seconds (default 600)'),
  })
  .strict();

/**
 * Sends per second by outcome over the last `seconds`, counted where the
 * limiter counts them: what the dashboard's send chart draws against the limit.
 */
export function sendRateRoutes(app: ZodApp, ctx: ApiContext): void {
  app.get(
    '/status/sends',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: "send attempts per second by outcome over the last `seconds`, counted at each attempt's start (where the limiter counts)",
        tags: ['operations'],
        querystring: sendRateQuery,
        response: answers({ 200: json(SendRateShape, 'attempts per second') }, { 400: BAD_INPUT }),
      },
    },
    async (request) => attemptsPerSecond(ctx.pool, ctx.schema, request.query.seconds),
  );
}
