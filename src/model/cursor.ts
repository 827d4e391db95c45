import { ValidationError } from '../errors.js';
import { isStorableText } from '../text.js';

/**
 * Keyset cursors for the listing routes: `[created_at, id]` of the last row
 * of a page, as PostgreSQL prints it in UTC, base64url-encoded. Opaque to
 * clients and checked like any other input when it comes back.
 *
 * The SQL expression that prints created_at the way a cursor keeps it.
 */
export const CURSOR_AT_SQL = (column: string): string => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

// A cursor carries created_at to the microsecond, as PostgreSQL keeps it: the
// expiry lane writes a whole batch with one captured now, and a cursor cut to
// milliseconds (a JS Date) would skip the rest of that batch on the next page.
export function encodeCursor(at: string, id: string): string {
  return Buffer.from(JSON.stringify([at, id])).toString('base64url');
}

// Exactly the UTC form encodeCursor writes (older cursors had milliseconds).
const CURSOR_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?Z$/;

/**
 * A cursor comes back from the client, so it is input like any other: what
 * it decodes to must be something PostgreSQL accepts, or a tampered cursor
 * would be a 5xx. Date.parse is too lenient for that ("1" is the year 2001,
 * February 31st rolls over, year 0 does not exist in PostgreSQL).
 */
export function decodeCursor(cursor: string): [string, string] {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string') {
    const [at, id] = value as [string, string];
    const time = CURSOR_TIME.exec(at);
    if (time && isStorableText(id) && isRealUtcTime(time)) return [at, id];
  }
  throw new ValidationError('cursor', 'is not a cursor returned by this API');
}

function isRealUtcTime(parts: RegExpExecArray): boolean {
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  // Date.UTC rolls an out-of-range field over (February 31st -> March 2nd)
  // and maps years 0-99 to 19xx, so a round trip that changes anything means
  // PostgreSQL could refuse it; no cursor this API wrote is refused.
  return (
    year >= 1 &&
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute &&
    date.getUTCSeconds() === second
  );
}
