import { ValidationError } from './errors.js';
import { zod } from './zod.js';

/**
 * The one rule for strings that arrive from outside and may reach the
 * database. PostgreSQL refuses NUL (U+0000) in text and jsonb (22021,
 * 22P05), and jsonb refuses an unpaired UTF-16 surrogate, which a JSON body
 * can carry as "\ud800" (22P02; in a text column it would silently become
 * U+FFFD). Both would surface as a 5xx, so every such string is checked here
 * and refused as a 400 naming the field instead.
 */

export const UNSTORABLE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired UTF-16 surrogates';

// Without the `u` flag the regex sees UTF-16 code units, which is what a lone surrogate is.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isStorableText(value: string): boolean {
  return !UNSTORABLE.test(value);
}

/**
 * A zod string that refuses what PostgreSQL cannot store. Further checks
 * chain after it, so this rule is reported first (a NUL in an email address
 * says so, rather than "must be an email address").
 */
export function storableText(typeMessage = 'must be a string') {
  return zod().string(typeMessage).refine(isStorableText, { message: UNSTORABLE_TEXT_MESSAGE, abort: true });
}

/**
 * Deepest nesting accepted in client JSON stored as jsonb (metadata). Deep
 * enough for any real use; far from where JSON.stringify overflows the stack
 * (~5,000 levels fit in the body limit and crashed it).
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Check a parsed JSON value before anything recursive touches it: every key
 * and string is storable text and nothing is nested deeper than `maxDepth`.
 * Iterative (an explicit stack), so depth cannot overflow this check either.
 * Throws a ValidationError naming `field` (with the path to a bad string).
 */
export function checkJsonValue(value: unknown, field: string, maxDepth = MAX_JSON_DEPTH): void {
  const pending: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: field, depth: 0 }];
  while (pending.length > 0) {
    const { value: current, path, depth } = pending.pop()!;
    if (typeof current === 'string') {
      if (!isStorableText(current)) throw new ValidationError(path, UNSTORABLE_TEXT_MESSAGE);
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth + 1 > maxDepth) throw new ValidationError(field, `must not be nested more than ${maxDepth} levels deep`);
    if (Array.isArray(current)) {
      current.forEach((item, index) => pending.push({ value: item, path: `${path}.${index}`, depth: depth + 1 }));
      continue;
    }
    for (const [key, item] of Object.entries(current)) {
      // A bad key cannot be quoted in the field name itself, so the parent is named.
      if (!isStorableText(key)) throw new ValidationError(path, `keys ${UNSTORABLE_TEXT_MESSAGE}`);
      pending.push({ value: item, path: `${path}.${key}`, depth: depth + 1 });
    }
  }
}
