import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { NotFoundError } from '../../errors.js';
import { addressHash, suppressionKey, validateAddress } from '../../model/address.js';
import { SuppressionReason } from '../../model/suppression-reasons.js';
import { suppressionsAdd, suppressionsGet, suppressionsList, suppressionsRemove } from '../../tables/suppressions.js';
import { opsOf, pageQuery, parse, type ApiContext } from '../context.js';
import { access } from '../auth.js';

const REASONS = Object.values(SuppressionReason) as [SuppressionReason, ...SuppressionReason[]];

export const suppressionsListQuery = z
  .object({
    reason: z.enum(REASONS, `must be one of ${REASONS.join(', ')}`).optional(),
    ...pageQuery,
  })
  .strict();

export const suppressionAddBody = z
  .object({
    address: z.string('must be a string'),
    detail: z
      .string('must be a string')
      .trim()
      .min(1, 'must not be empty')
      .max(500, 'must be at most 500 characters')
      .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
      .optional(),
  })
  .strict();

type AddressParams = { Params: { address: string } };

/**
 * `/v1/suppressions` (bearer-authenticated like all of /v1): list (newest
 * first, keyset-paged), add (manual), remove. An address is named by itself
 * or by its hash (`sha256` hex of the trimmed, lower-cased address), which
 * is all that is left of it after erasure. Logs carry the reason, never the
 * address.
 */
export function suppressionRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { pool, schema, logger, metrics } = ctx;

  // Fleet-wide: the list is shared by every tenant (a suppressed address is never sent to, whoever's hold it is).
  app.get('/suppressions', access('read', 'fleet'), async (request) => {
    const query = parse(suppressionsListQuery, request.query);
    return suppressionsList(pool, schema, {
      limit: query.limit,
      ...(query.reason ? { reason: query.reason } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
  });

  app.post('/suppressions', access('operate', 'fleet'), async (request, reply) => {
    const body = parse(suppressionAddBody, request.body ?? {});
    const address = validateAddress(body.address);
    // Already suppressed: the existing entry (its first reason stands), 200, and nothing is recorded.
    const { suppression, created } = await opsOf(request, ctx).addSuppression(address, body.detail ?? null);
    if (created) metrics.suppressionsAdded.inc({ reason: 'manual' });
    return reply.code(created ? 201 : 200).send(suppression);
  });

  app.delete<AddressParams>('/suppressions/:address', access('operate', 'fleet'), async (request) => {
    const hash = suppressionKey(request.params.address);
    const removed = await opsOf(request, ctx).removeSuppression(hash);
    if (!removed) throw new NotFoundError('suppression', request.params.address.slice(0, 320));
    return { removed };
  });
}
