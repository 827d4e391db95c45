import { z } from 'zod';
import { NotFoundError } from '../../errors.js';
import { suppressionKey, validateAddress } from '../../model/address.js';
import { SuppressionReason } from '../../model/suppression-reasons.js';
import { suppressionsList } from '../../tables/suppressions.js';
import { opsOf, pageQuery, type ApiContext } from '../context.js';
import { access } from '../auth.js';
import { answers, BAD_INPUT, json, page, type ZodApp } from '../shapes/common.js';
import { SuppressionShape } from '../shapes/suppressions.js';

const REASONS = Object.values(SuppressionReason) as [SuppressionReason, ...SuppressionReason[]];

export const suppressionsListQuery = z
  .object({
    reason: z.enum(REASONS, `must be one of ${REASONS.join(', ')}`).optional(),
    ...pageQuery,
  })
  .strict();

export const suppressionAddBody = z
  .object({
    address: z.string('must be a string').describe('the email address to suppress'),
    detail: z
      .string('must be a string')
      .trim()
      .min(1, 'must not be empty')
      .max(500, 'must be at most 500 characters')
      .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
      .optional()
      .describe('why, for the operators who read the list'),
  })
  .strict();

/** The address, or its hash, in a path; the address is checked by the handler (validateAddress), as the CLI does. */
const addressParams = z.object({ address: z.string().describe('the address, or sha256 hex of it trimmed and lower-cased') });

/**
 * `/v1/suppressions` (bearer-authenticated like all of /v1): list (newest
 * first, keyset-paged), add (manual), remove. An address is named by itself
 * or by its hash (`sha256` hex of the trimmed, lower-cased address), which
 * is all that is left of it after erasure. Logs carry the reason, never the
 * address.
 */
export function suppressionRoutes(app: ZodApp, ctx: ApiContext): void {
  const { pool, schema, metrics } = ctx;

  // Fleet-wide: the list is shared by every tenant (a suppressed address is never sent to, whoever's hold it is).
  app.get(
    '/suppressions',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: 'suppressed addresses newest first, optionally of one reason, keyset-paged (pass nextCursor back as cursor)',
        tags: ['suppressions'],
        querystring: suppressionsListQuery,
        response: answers({ 200: json(page('suppressions', SuppressionShape), 'a page of suppressions') }, { 400: BAD_INPUT }),
      },
    },
    async (request) => {
      const query = request.query;
      return suppressionsList(pool, schema, {
        limit: query.limit,
        ...(query.reason ? { reason: query.reason } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
    },
  );

  app.post(
    '/suppressions',
    {
      ...access('operate', 'fleet'),
      schema: {
        summary: 'suppress an address (reason manual); an address already suppressed answers 200 with its entry, whose first reason stands',
        tags: ['suppressions'],
        body: suppressionAddBody,
        response: answers(
          { 201: json(SuppressionShape, 'suppressed'), 200: json(SuppressionShape, 'already suppressed: the existing entry, unchanged') },
          { 400: BAD_INPUT },
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const body = request.body;
      const address = validateAddress(body.address);
      // Already suppressed: the existing entry (its first reason stands), 200, and nothing is recorded.
      const { suppression, created } = await opsOf(request, ctx).addSuppression(address, body.detail ?? null);
      if (created) metrics.suppressionsAdded.inc({ reason: 'manual' });
      return reply.code(created ? 201 : 200).send(suppression);
    },
  );

  app.delete(
    '/suppressions/:address',
    {
      ...access('operate', 'fleet'),
      schema: {
        summary: 'lift a suppression, named by the address or its sha256 hash',
        tags: ['suppressions'],
        params: addressParams,
        response: answers(
          { 200: json(z.object({ removed: SuppressionShape.describe('the entry that was lifted') }), 'lifted') },
          { 400: BAD_INPUT, 404: 'the address is not suppressed' },
          { body: true },
        ),
      },
    },
    async (request) => {
      const hash = suppressionKey(request.params.address);
      const removed = await opsOf(request, ctx).removeSuppression(hash);
      if (!removed) throw new NotFoundError('suppression', request.params.address.slice(0, 320));
      return { removed };
    },
  );
}
