import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { eraseAddress } from '../../retention/erase.js';
import { DEFAULT_RETENTION } from '../../model/retention-policy.js';
import { Pruner } from '../../retention/prune.js';
import { retentionOldest, retentionPreview } from '../../retention/preview.js';
import { ApiError } from '../errors.js';
import { parse, type ApiContext } from '../context.js';

export const pruneBody = z.object({ dryRun: z.boolean('must be true or false').optional() }).strict().optional().nullable();
export const erasureBody = z.object({ email: z.unknown() }).strict();

/** A prune started through the API returns after this long even with work left (the prune worker carries on). */
export const API_PRUNE_BUDGET_MS = 10_000;

/** lock_timeout inside a batch: the rows are busy, the request can simply be sent again. */
async function unlessLocked<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') {
      throw new ApiError(409, 'locked', 'rows needed are locked by another transaction; try again');
    }
    throw error;
  }
}

export function retentionRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { pool, schema, logger, metrics } = ctx;
  const policy = ctx.config.retention ?? DEFAULT_RETENTION;

  app.get('/retention', async () => ({ policy, ...(await retentionOldest(pool, schema)) }));

  app.post('/retention/prune', async (request) => {
    const body = parse(pruneBody, request.body);
    if (body?.dryRun) {
      const preview = await retentionPreview(pool, schema, { now: null, retentionDays: policy.retentionDays, erasePiiAfterDays: policy.erasePiiAfterDays });
      return { dryRun: true, policy, ...preview };
    }
    const run = await unlessLocked(() => new Pruner({ pool, schema, policy, logger, metrics }).runUntilDone({ budgetMs: API_PRUNE_BUDGET_MS }));
    return { dryRun: false, policy, ...run };
  });

  app.post('/erasures', async (request) => {
    const { email } = parse(erasureBody, request.body ?? {});
    return unlessLocked(() => eraseAddress(pool, email, { schema, logger, metrics }));
  });
}
