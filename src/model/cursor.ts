import { ValidationError } from '../errors.js';

/** Rows per listing page when the caller gives no limit, and the most it may ask for. */
export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;

/**
 * Keyset cursors for every listing (intents, holds, suppressions), newest
 * first by `(created_at, key)`: the last row's created_at in whole
 * microseconds since the epoch (PostgreSQL's precision; a JavaScript Date has
 * only milliseconds, and the expiry lane writes a whole batch with one
 * captured now, so a millisecond cursor would skip the rest of that batch)
 * and its key, base64url-encoded JSON. Opaque to clients and checked like any
 * other input when it comes back: the time can only be digits and the key
 * must match the listing's own key rule, so a forged cursor is a 400, never
 * text the database must parse.
 */
export interface ListingCursor {
  /** created_at in microseconds since the epoch, as digits. */
  timeUs: string;
  key: string;
}

/** SQL selecting a row's cursor time (`column` is its created_at). */
export const cursorTimeSql = (column: string): string => `((extract(epoch FROM ${column}) * 1000000)::bigint)::text`;

/**
 * SQL keeping the rows after the cursor in $timeParam / $keyParam (both null
 * on the first page), for `ORDER BY column DESC, key DESC`.
 */
export const afterCursorSql = (column: string, key: string, timeParam: string, keyParam: string): string =>
  `(${timeParam}::bigint IS NULL OR (${column}, ${key}) < (timestamptz 'epoch' + ${timeParam}::bigint * interval '1 microsecond', ${keyParam}::text))`;

export function encodeCursor(cursor: ListingCursor): string {
  return Buffer.from(JSON.stringify([cursor.timeUs, cursor.key])).toString('base64url');
}

export function decodeCursor(cursor: string, isKey: (key: string) => boolean): ListingCursor {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (Array.isArray(value) && value.length === 2) {
    const [timeUs, key] = value as unknown[];
    if (typeof timeUs === 'string' && /^-?\d{1,16}$/.test(timeUs) && typeof key === 'string' && isKey(key)) return { timeUs, key };
  }
  throw new ValidationError('cursor', 'is not a cursor returned by this API');
}

/** One page of a listing: the rows fetched with `LIMIT limit + 1`, cut to `limit`, and the next cursor. */
export function pageOf<R extends { cursor_us: string }>(rows: R[], limit: number, keyOf: (row: R) => string): { page: R[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { page, nextCursor: rows.length > limit && last ? encodeCursor({ timeUs: last.cursor_us, key: keyOf(last) }) : null };
}

/**
 * Keyset cursors for a listing ordered by its key alone, ascending (tenant
 * policies, by tenant): the last row's key, base64url-encoded JSON, checked
 * by the listing's key rule when it comes back, as decodeCursor does.
 */
export function encodeKeyCursor(key: string): string {
  return Buffer.from(JSON.stringify([key])).toString('base64url');
}

export function decodeKeyCursor(cursor: string, isKey: (key: string) => boolean): string {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (Array.isArray(value) && value.length === 1 && typeof value[0] === 'string' && isKey(value[0])) return value[0];
  throw new ValidationError('cursor', 'is not a cursor returned by this API');
}
