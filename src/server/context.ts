import type pg from 'pg';
import { z } from 'zod';
import type { Config } from '../config.js';
import { ValidationError } from '../errors.js';
import { toValidationError } from '../model/hold-input.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../model/cursor.js';
import { INTENT_ID_PATTERN } from '../model/intent-states.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Operations } from '../ops/operations.js';
import type { FastifyRequest } from 'fastify';
import { NotFoundError } from '../errors.js';
import { tenantAllowed } from '../model/api-tokens.js';
import { actorOf, principalOf } from './auth.js';
import { storableText } from '../text.js';

/** What every route needs: the database, where the tables are, and where to log. */
/** The hold defaults the API applies (LEASEHOLD_REMIND_BEFORE_S, LEASEHOLD_NOTIFY_ON_CONFIRM, LEASEHOLD_NOTICE_DEADLINE_S), and the hook its changes call (LEASEHOLD_EXPIRE_HOOK). */
export type HoldSettings = 'remindBeforeSeconds' | 'notifyOnConfirm' | 'noticeDeadlineSeconds' | 'expireHook' | 'expireHookTimeoutMs';

export interface ApiContext {
  pool: pg.Pool;
  schema: string;
  config: Pick<Config, 'expiryPromiseS' | 'emailPromiseS' | 'ratePerSecond' | 'rateBurst'> & Partial<Pick<Config, 'retention' | HoldSettings>>;
  logger: Logger;
  metrics: Metrics;
  /** Pause, resume, replay, rate limit: the same operations the CLI runs. */
  ops: Operations;
}

/** Parse with zod; the first issue becomes a ValidationError naming the field (400). */
export function parse<S extends z.ZodType>(schema: S, value: unknown, prefix = ''): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw toValidationError(parsed.error, prefix, { schema, input: value });
  return parsed.data;
}

/**
 * Routes that take no input (confirm, cancel, resume, replay) accept no body
 * or an empty JSON object; anything else is an unknown field, not ignored.
 */
export function expectNoBody(body: unknown): void {
  if (body === undefined || body === null) return;
  if (typeof body !== 'object' || Array.isArray(body)) throw new ValidationError('body', 'must be empty or a JSON object');
  const first = Object.keys(body)[0];
  if (first !== undefined) throw new ValidationError(first, 'unknown field');
}


/** The paging fields every listing takes: `limit` and the previous page's `nextCursor`. */
export const pageQuery = {
  limit: z.coerce
    .number('must be a number')
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(MAX_PAGE_LIMIT, `must be at most ${MAX_PAGE_LIMIT}`)
    .default(DEFAULT_PAGE_LIMIT),
  cursor: z.string('must be a single value').min(1).max(1000, 'is too long').optional(),
};

export const intentIdSchema = storableText()
  .regex(INTENT_ID_PATTERN, 'must be 1-200 characters of letters, digits, ".", "_", ":", "#" or "-"');

/** The operations on behalf of the request's token (the audit entry names it and the request id). */
export function opsOf(request: FastifyRequest, ctx: Pick<ApiContext, 'ops'>): Operations {
  return ctx.ops.as(actorOf(request));
}

/**
 * A token limited to tenants sees only their objects: another tenant's
 * hold or intent answers 404, exactly as a missing one, so its existence
 * does not leak.
 */
export function checkTenant(request: FastifyRequest, tenant: string, what: string, id: string): void {
  if (!tenantAllowed(principalOf(request), tenant)) throw new NotFoundError(what, id);
}

/**
 * The tenant a listing is filtered to. An unlimited token: the query's (or
 * none). A limited one: the query's if it is one of its tenants (another's
 * gives `empty`: an empty page, as for a tenant with nothing), else its only
 * tenant; with several it must name one.
 */
export function listingTenant(request: FastifyRequest, asked: string | undefined): { tenant?: string; empty?: true } {
  const { tenants } = principalOf(request);
  if (tenants === null) return asked !== undefined ? { tenant: asked } : {};
  if (asked !== undefined) return tenants.includes(asked) ? { tenant: asked } : { empty: true };
  if (tenants.length === 1) return { tenant: tenants[0]! };
  throw new ValidationError('tenant', `must be given: this token is limited to tenants ${tenants.join(', ')}`);
}
