import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { ValidationError } from '../errors.js';
import { isStorableText } from '../text.js';
import type { Attempt, Intent, IntentState } from '../model/intent-states.js';

/** Read side of the outbox: what operators, the API and `trace` look at. */

interface IntentRow {
  id: string;
  reservation_id: string;
  template: string;
  state: IntentState;
  attempts: number;
  failed_attempts: number;
  available_at: Date;
  created_at: Date;
  sent_at: Date | null;
  finished_at: Date | null;
  receipt: string | null;
  last_error: string | null;
  lease_token: string | null;
  lease_expires_at: Date | null;
  lease_expirations: number;
  replays: number;
  possible_duplicate: boolean;
}

// The recipient is deliberately not selected: nothing on the read side needs it.
const INTENT_COLUMNS = `id, reservation_id, template, state, attempts, failed_attempts, available_at, created_at,
  sent_at, finished_at, receipt, last_error, lease_token, lease_expires_at, lease_expirations, replays, possible_duplicate`;

export function intentFromRow(row: IntentRow): Intent {
  return {
    id: row.id,
    holdId: row.reservation_id,
    template: row.template,
    state: row.state,
    attempts: row.attempts,
    failedAttempts: row.failed_attempts,
    availableAt: row.available_at,
    createdAt: row.created_at,
    sentAt: row.sent_at,
    finishedAt: row.finished_at,
    receipt: row.receipt,
    lastError: row.last_error,
    leased: row.lease_token !== null,
    leaseExpiresAt: row.lease_expires_at,
    leaseExpirations: row.lease_expirations,
    replays: row.replays,
    possibleDuplicate: row.possible_duplicate,
  };
}

interface AttemptRow {
  attempt: number;
  provider: string | null;
  started_at: Date;
  finished_at: Date | null;
  outcome: Attempt['outcome'];
  outcome_unknown: boolean;
  provider_status: number | null;
  provider_code: string | null;
  receipt: string | null;
  error: string | null;
  duration_ms: number | null;
}

function attemptFromRow(row: AttemptRow): Attempt {
  return {
    attempt: row.attempt,
    provider: row.provider,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    outcome: row.outcome,
    outcomeUnknown: row.outcome_unknown,
    providerStatus: row.provider_status,
    providerCode: row.provider_code,
    receipt: row.receipt,
    error: row.error,
    durationMs: row.duration_ms,
  };
}

export async function intentsGet(db: Queryable, schema: string, id: string): Promise<Intent | undefined> {
  const { rows } = await db.query<IntentRow>(`SELECT ${INTENT_COLUMNS} FROM ${ident(schema)}.email_outbox WHERE id = $1`, [id]);
  return rows[0] && intentFromRow(rows[0]);
}

export async function intentsGetByHold(db: Queryable, schema: string, holdId: string): Promise<Intent | undefined> {
  const { rows } = await db.query<IntentRow>(
    `SELECT ${INTENT_COLUMNS} FROM ${ident(schema)}.email_outbox WHERE reservation_id = $1`,
    [holdId],
  );
  return rows[0] && intentFromRow(rows[0]);
}

export async function attemptsList(db: Queryable, schema: string, intentId: string): Promise<Attempt[]> {
  const { rows } = await db.query<AttemptRow>(
    `SELECT attempt, provider, started_at, finished_at, outcome, outcome_unknown, provider_status, provider_code,
            receipt, error, duration_ms
       FROM ${ident(schema)}.email_attempts WHERE intent_id = $1 ORDER BY attempt`,
    [intentId],
  );
  return rows.map(attemptFromRow);
}

export interface IntentPage {
  intents: Intent[];
  /** Opaque cursor for the next (older) page, or null at the end. */
  nextCursor: string | null;
}

// A cursor carries created_at to the microsecond, as PostgreSQL keeps it: the
// expiry lane writes a whole batch with one captured now, and a cursor cut to
// milliseconds (a JS Date) would skip the rest of that batch on the next page.
function encodeCursor(row: IntentRow & { cursor_at: string }): string {
  return Buffer.from(JSON.stringify([row.cursor_at, row.id])).toString('base64url');
}

// Exactly the UTC form encodeCursor writes (older cursors had milliseconds).
const CURSOR_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?Z$/;

/**
 * A cursor comes back from the client, so it is input like any other: what
 * it decodes to must be something PostgreSQL accepts, or a tampered cursor
 * would be a 5xx. Date.parse is too lenient for that ("1" is the year 2001,
 * February 31st rolls over, year 0 does not exist in PostgreSQL).
 */
function decodeCursor(cursor: string): [string, string] {
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

/** Intents newest first, optionally of one state, keyset-paged (stable under inserts). */
export async function intentsList(
  db: Queryable,
  schema: string,
  options: { state?: IntentState; limit: number; cursor?: string },
): Promise<IntentPage> {
  const after = options.cursor ? decodeCursor(options.cursor) : null;
  const { rows } = await db.query<IntentRow & { cursor_at: string }>(
    `SELECT ${INTENT_COLUMNS}, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
       FROM ${ident(schema)}.email_outbox
      WHERE ($1::text IS NULL OR state = $1)
        AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3::text))
      ORDER BY created_at DESC, id DESC
      LIMIT $4`,
    [options.state ?? null, after?.[0] ?? null, after?.[1] ?? null, options.limit + 1],
  );
  const page = rows.slice(0, options.limit);
  const more = rows.length > options.limit;
  return { intents: page.map(intentFromRow), nextCursor: more && page.length > 0 ? encodeCursor(page.at(-1)!) : null };
}
