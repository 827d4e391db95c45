import { z } from 'zod';
import { eraseAddress, eraseTenant } from '../../retention/erase.js';
import { DEFAULT_RETENTION } from '../../model/retention-policy.js';
import { Pruner } from '../../retention/prune.js';
import { retentionOldest, retentionPreview } from '../../retention/preview.js';
import { ValidationError } from '../../errors.js';
import { validateErasureAddress } from '../../retention/policy.js';
import { ApiError } from '../errors.js';
import type { ApiContext } from '../context.js';
import { access, actorOf } from '../auth.js';
import { AuditAction } from '../../model/audit-actions.js';
import { auditInsert } from '../../tables/audit-log.js';
import { answers, BAD_INPUT, json, type ZodApp } from '../shapes/common.js';
import { ErasureShape, PruneAnswerShape, RetentionShape } from '../shapes/retention.js';

export const pruneBody = z.object({ dryRun: z.boolean('must be true or false').optional() }).strict().optional().nullable();
export const erasureBody = z
  .object({
    address: z.unknown().describe("a person's email address: erase it everywhere (the same name as on suppressions)"),
    tenant: z.unknown().describe("a tenant leaving: erase every one of its stories (its policy stays)"),
  })
  .partial()
  .strict();

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

const LOCKED = 'locked: rows needed are locked by another transaction; send it again';

export function retentionRoutes(app: ZodApp, ctx: ApiContext): void {
  const { pool, schema, logger, metrics } = ctx;
  const policy = ctx.config.retention ?? DEFAULT_RETENTION;

  app.get(
    '/retention',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: 'the retention policy and the oldest rows it is waiting for',
        tags: ['retention'],
        response: answers({ 200: json(RetentionShape, 'the policy and the oldest retained ages') }),
      },
    },
    async () => ({ policy, ...(await retentionOldest(pool, schema)) }),
  );

  app.post(
    '/retention/prune',
    {
      ...access('admin', 'fleet'),
      schema: {
        summary: 'run retention now (at most 10 s; the prune worker carries on with what is left), or preview it with dryRun',
        tags: ['retention'],
        body: pruneBody,
        response: answers(
          { 200: json(PruneAnswerShape, 'what was deleted and erased (dryRun: what would be; nothing changes)') },
          { 400: BAD_INPUT, 409: LOCKED },
          { body: true },
        ),
      },
    },
    async (request) => {
      if (request.body?.dryRun) {
        const preview = await retentionPreview(pool, schema, { now: null, retentionDays: policy.retentionDays, erasePiiAfterDays: policy.erasePiiAfterDays });
        await auditInsert(pool, schema, actorOf(request), { action: AuditAction.retentionRun, target: 'dry-run', detail: { dryRun: true } });
        return { dryRun: true as const, policy, ...preview };
      }
      const run = await unlessLocked(() => new Pruner({ pool, schema, policy, logger, metrics }).runUntilDone({ budgetMs: API_PRUNE_BUDGET_MS }));
      // A run is many short transactions (one per batch): its entry, with the totals, is written once it ends.
      await auditInsert(pool, schema, actorOf(request), {
        action: AuditAction.retentionRun,
        target: 'prune',
        detail: { pruned: run.pruned, erased: run.erased, rounds: run.rounds, complete: run.complete },
      });
      return { dryRun: false as const, policy, ...run };
    },
  );

  app.post(
    '/erasures',
    {
      ...access('admin', 'fleet'),
      schema: {
        summary: "erase one address's personal data everywhere retention reaches (`{address}`), or every story of one tenant (`{tenant}`); held holds are reported, not changed",
        tags: ['retention'],
        // No body (or null) reads as {}: the refusal then names `address`.
        body: erasureBody.nullish(),
        response: answers({ 200: json(ErasureShape, 'what was erased, per table') }, { 400: BAD_INPUT, 409: LOCKED }, { body: true }),
      },
    },
    async (request) => {
      const body = request.body ?? {};
      if ('tenant' in body && 'address' in body) throw new ValidationError('tenant', 'give either address or tenant, not both');
      const actor = actorOf(request);
      if ('tenant' in body) return unlessLocked(() => eraseTenant(pool, body.tenant, { schema, logger, metrics, batchSize: policy.batchSize, actor }));
      if (!('address' in body)) throw new ValidationError('address', 'required (or tenant)');
      // Checked here so a mistake names the body's field (the library names its argument `email`).
      const address = validateErasureAddress(body.address, 'address');
      return unlessLocked(() => eraseAddress(pool, address, { schema, logger, metrics, actor }));
    },
  );
}
