import { z } from 'zod';
import { MAX_PAUSE_SECONDS } from '../../model/delivery-policy.js';
import { storableText } from '../../text.js';
import { expectNoBody, opsOf, type ApiContext } from '../context.js';
import { access } from '../auth.js';
import { answers, BAD_INPUT, json, type ZodApp } from '../shapes/common.js';
import { DeliveryControlShape, DeliveryShape, RateLimitShape } from '../shapes/delivery.js';

/** The reason's length rule is the pause's own (validatePauseReason): one rule for API, CLI and library. */
export const pauseBody = z
  .object({
    reason: storableText().optional().describe('shown on the dashboard and in status (default: paused by an operator)'),
    forSeconds: z
      .number('must be a number of seconds')
      .positive('must be greater than 0')
      .max(MAX_PAUSE_SECONDS, `must be at most ${MAX_PAUSE_SECONDS}`)
      .optional()
      .describe('the pause lifts itself after this many seconds (the CLI\'s pause --for); left out: until resumed'),
  })
  .strict()
  .optional()
  .nullable();

/** Either half alone keeps the other half of the current policy, as the CLI's flags do. */
export const policyBody = z
  .object({
    perSecond: z.number('must be a number').optional().describe('permits refilled per second'),
    burst: z.number('must be a number').optional().describe('most permits at once'),
  })
  .strict();

/** The pause options Operations takes, from a pause body (absent or null: the defaults). */
export const pauseOptions = (body: z.output<typeof pauseBody>) => ({
  ...(body?.reason !== undefined ? { reason: body.reason } : {}),
  ...(body?.forSeconds !== undefined ? { forSeconds: body.forSeconds } : {}),
});

/** The policy change Operations takes, from a policy body. */
export const policyChange = (body: z.output<typeof policyBody>) => ({
  ...(body.perSecond !== undefined ? { perSecond: body.perSecond } : {}),
  ...(body.burst !== undefined ? { burst: body.burst } : {}),
});

export function deliveryRoutes(app: ZodApp, ctx: ApiContext): void {
  const { ops } = ctx;
  app.get(
    '/delivery',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: 'the fleet-wide delivery control (paused or not, why, until when) and the accounts paused on their own',
        tags: ['delivery'],
        response: answers({ 200: json(DeliveryShape, 'delivery control') }),
      },
    },
    async () => ops.delivery(),
  );

  app.post(
    '/delivery/pause',
    {
      ...access('operate', 'fleet'),
      schema: {
        summary: "pause delivery fleet-wide within a second; forSeconds lifts it by itself (the CLI's pause --for)",
        tags: ['delivery'],
        body: pauseBody,
        response: answers({ 200: json(DeliveryControlShape, 'paused') }, { 400: BAD_INPUT }, { body: true }),
      },
    },
    async (request) => opsOf(request, ctx).pause(pauseOptions(request.body)),
  );

  app.post(
    '/delivery/resume',
    {
      ...access('operate', 'fleet'),
      schema: {
        summary: "resume delivery: lift the fleet's pause and every account's own",
        tags: ['delivery'],
        response: answers({ 200: json(DeliveryShape, 'running') }, { 400: BAD_INPUT }, { body: true }),
      },
    },
    async (request) => {
      expectNoBody(request.body);
      return (await opsOf(request, ctx).resume()).after;
    },
  );

  app.get(
    '/rate-limit',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: 'the limiter of the first account in failover: its policy and its permits now',
        tags: ['delivery'],
        response: answers({ 200: json(RateLimitShape, 'the limiter') }),
      },
    },
    async () => ops.rateLimit(),
  );

  app.put(
    '/rate-limit',
    {
      ...access('operate', 'fleet'),
      schema: {
        summary: "change the first account's limiter; either field alone keeps the other (all workers obey within a second)",
        tags: ['delivery'],
        body: policyBody,
        response: answers({ 200: json(RateLimitShape, 'the new policy') }, { 400: BAD_INPUT }, { body: true }),
      },
    },
    async (request) => opsOf(request, ctx).setRateLimit(policyChange(request.body)),
  );
}
