import { z } from 'zod';
import { LANE_SAMPLE_INTERVAL_S, LANE_SAMPLES_SPAN_S, laneSamplesSince } from '../../tables/lane-samples.js';
import type { ApiContext } from '../context.js';
import { access } from '../auth.js';
import { answers, BAD_INPUT, json, type ZodApp } from '../shapes/common.js';
import { LaneHistoryShape } from '../shapes/status.js';

export const historyQuery = z
  .object({
    seconds: z.coerce
      .number('must be a number')
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(LANE_SAMPLES_SPAN_S, `must be at most ${LANE_SAMPLES_SPAN_S} (the samples kept)`)
      .default(LANE_SAMPLES_SPAN_S)
      .describe(`how far back, in seconds (default and most: ${LANE_SAMPLES_SPAN_S})`),
  })
  .strict();

/**
 * Both lanes over the last `seconds` (at most an hour): backlog, due holds
 * and the oldest ages, one sample per 10 s as the service sampled them
 * (read/lane-sampler.ts), oldest first. What the dashboard draws on open,
 * before its own samples; sends per second come from /v1/status/sends.
 */
export function historyRoutes(app: ZodApp, ctx: ApiContext): void {
  app.get(
    '/status/history',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: `both lanes over the last \`seconds\` (at most ${LANE_SAMPLES_SPAN_S}): backlog, due holds and oldest ages, one sample per ${LANE_SAMPLE_INTERVAL_S} s as the service took them`,
        tags: ['operations'],
        querystring: historyQuery,
        response: answers({ 200: json(LaneHistoryShape, 'the samples, oldest first') }, { 400: BAD_INPUT }),
      },
    },
    async (request) => {
      const { now, samples } = await laneSamplesSince(ctx.pool, ctx.schema, request.query.seconds);
      return { now, intervalSeconds: LANE_SAMPLE_INTERVAL_S, samples };
    },
  );
}
