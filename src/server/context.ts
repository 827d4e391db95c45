import type pg from 'pg';
import { z } from 'zod';
import type { Config } from '../config.js';
import { ValidationError } from '../errors.js';
import { toValidationError } from '../model/hold-input.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../model/cursor.js';
import { INTENT_ID_PATTERN } from '../model/intent-states.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Operations } from '../ops.js';
import { storableText } from '../text.js';

/** What every route needs: the database, where the tables are, and where to log. */
export interface ApiContext {
  pool: pg.Pool;
  schema: string;
  config: Pick<Config, 'expiryPromiseS' | 'emailPromiseS' | 'ratePerSecond' | 'rateBurst'> & Partial<Pick<Config, 'retention'>>;
  logger: Logger;
  metrics: Metrics;
  /** Pause, resume, replay, rate limit: the same operations the CLI runs. */
  ops: Operations;
}

/** Parse with zod; the first issue becomes a ValidationError naming the field (400). */
export function parse<S extends z.ZodType>(schema: S, value: unknown, prefix = ''): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw toValidationError(parsed.error, prefix);
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
  if (first !== undefined) throw new ValidationError(first, 'is not a known field');
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
