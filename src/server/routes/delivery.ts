import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { MAX_PAUSE_SECONDS } from '../../ops.js';
import { storableText } from '../../text.js';
import { expectNoBody, opsOf, parse, type ApiContext } from '../context.js';
import { access } from '../auth.js';

/** The reason's length rule is the pause's own (validatePauseReason): one rule for API, CLI and library. */
export const pauseBody = z
  .object({
    reason: storableText().optional(),
    forSeconds: z
      .number('must be a number of seconds')
      .positive('must be greater than 0')
      .max(MAX_PAUSE_SECONDS, `must be at most ${MAX_PAUSE_SECONDS}`)
      .optional(),
  })
  .strict()
  .optional()
  .nullable();

/** Either half alone keeps the other half of the current policy, as the CLI's flags do. */
export const policyBody = z.object({ perSecond: z.number('must be a number').optional(), burst: z.number('must be a number').optional() }).strict();

export function deliveryRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { ops } = ctx;
  app.get('/delivery', access('read', 'fleet'), async () => ops.delivery());

  app.post('/delivery/pause', access('operate', 'fleet'), async (request) => {
    const body = parse(pauseBody, request.body);
    return opsOf(request, ctx).pause({
      ...(body?.reason !== undefined ? { reason: body.reason } : {}),
      ...(body?.forSeconds !== undefined ? { forSeconds: body.forSeconds } : {}),
    });
  });

  app.post('/delivery/resume', access('operate', 'fleet'), async (request) => {
    expectNoBody(request.body);
    return (await opsOf(request, ctx).resume()).after;
  });

  app.get('/rate-limit', access('read', 'fleet'), async () => ops.rateLimit());

  app.put('/rate-limit', access('operate', 'fleet'), async (request) => {
    const body = parse(policyBody, request.body);
    return opsOf(request, ctx).setRateLimit({
      ...(body.perSecond !== undefined ? { perSecond: body.perSecond } : {}),
      ...(body.burst !== undefined ? { burst: body.burst } : {}),
    });
  });
}
