import type { Queryable } from '../../db/pool.js';
import { ident } from '../../db/pool.js';
import { afterCursorSql, cursorTimeSql, decodeCursor, pageOf } from '../../model/cursor.js';
import { INTENT_ID_PATTERN, IntentState, type Intent } from '../../model/intent-states.js';

/**
 * email_outbox, what operators, the API and `trace` read and change: an
 * intent and its page, replay, an operator's move, the backlog per account
 * and the oldest pending age (tables/outbox.ts is the table's module; the
 * lanes' statements are in ./lane.ts).
 *
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 */

interface IntentRow {
  id: string;
  reservation_id: string;
  tenant: string;
  template: string;
  state: IntentState;
  send_by: Date | null;
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
  account: string | null;
  pinned_account: string | null;
  sent_account: string | null;
}

// The recipient is deliberately not selected: nothing on the read side needs it.
const INTENT_COLUMNS = `id, reservation_id, tenant, template, state, send_by, attempts, failed_attempts, available_at, created_at,
  sent_at, finished_at, receipt, last_error, lease_token, lease_expires_at, lease_expirations, replays, possible_duplicate,
  account, pinned_account, sent_account`;

export function intentFromRow(row: IntentRow): Intent {
  return {
    id: row.id,
    holdId: row.reservation_id,
    tenant: row.tenant,
    template: row.template,
    state: row.state,
    sendBy: row.send_by,
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
    account: row.account,
    pinnedAccount: row.pinned_account,
    sentAccount: row.sent_account,
  };
}

export async function intentsGet(db: Queryable, schema: string, id: string): Promise<Intent | undefined> {
  const { rows } = await db.query<IntentRow>(`SELECT ${INTENT_COLUMNS} FROM ${ident(schema)}.email_outbox WHERE id = $1`, [id]);
  return rows[0] && intentFromRow(rows[0]);
}

/** A hold's intents (one per kind: reminder, expiry, confirmation), in the order they became available. */
export async function intentsOfHold(db: Queryable, schema: string, holdId: string): Promise<Intent[]> {
  const { rows } = await db.query<IntentRow>(
    `SELECT ${INTENT_COLUMNS} FROM ${ident(schema)}.email_outbox WHERE reservation_id = $1 ORDER BY created_at, id`,
    [holdId],
  );
  return rows.map(intentFromRow);
}

export interface IntentPage {
  intents: Intent[];
  /** Opaque cursor for the next (older) page, or null at the end. */
  nextCursor: string | null;
}

/**
 * Intents newest first, optionally of one state and of one tenant ('' is
 * the empty tenant's), keyset-paged (stable under inserts). Each state is
 * one walk of email_outbox_state_listing (state, created_at DESC, id DESC);
 * every state is those walks merged, each stopping after a page (a Merge
 * Append), so no form sorts the table however long its history. A tenant
 * filter walks the same indexes and skips the other tenants' rows.
 */
export async function intentsList(
  db: Queryable,
  schema: string,
  options: { state?: IntentState; tenant?: string; limit: number; cursor?: string },
): Promise<IntentPage> {
  const after = options.cursor ? decodeCursor(options.cursor, (key) => INTENT_ID_PATTERN.test(key)) : null;
  const ofState = (state: string) =>
    `(SELECT ${INTENT_COLUMNS}, ${cursorTimeSql('created_at')} AS cursor_us
        FROM ${ident(schema)}.email_outbox
       WHERE state = ${state} AND ($4::text IS NULL OR tenant = $4) AND ${afterCursorSql('created_at', 'id', '$1', '$2')}
       ORDER BY created_at DESC, id DESC
       LIMIT $3)`;
  const values: unknown[] = [after?.timeUs ?? null, after?.key ?? null, options.limit + 1, options.tenant ?? null];
  const text = options.state
    ? ofState('$5')
    : `SELECT * FROM (${Object.values(IntentState).map((state) => ofState(`'${state}'`)).join(' UNION ALL ')}) i
        ORDER BY created_at DESC, id DESC LIMIT $3`;
  const { rows } = await db.query<IntentRow & { cursor_us: string }>(text, options.state ? [...values, options.state] : values);
  const { page, nextCursor } = pageOf(rows, options.limit, (row) => row.id);
  return { intents: page.map(intentFromRow), nextCursor };
}

/**
 * Send a finished intent (sent, rejected or dead) again: pending with a
 * fresh attempt budget and its replay count raised, which changes the
 * provider idempotency key. Applies only to a finished intent that still has
 * a recipient; returns whether it did.
 */
export async function intentsReplay(db: Queryable, schema: string, id: string, now: Date | null = null): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE ${ident(schema)}.email_outbox SET
       state = 'pending', available_at = coalesce($2::timestamptz, now()), failed_attempts = 0, replays = replays + 1,
       finished_at = NULL, sent_at = NULL, receipt = NULL, last_error = NULL, possible_duplicate = false,
       -- The new round has its own key: an ambiguous attempt of the old one says
       -- nothing about whether this deliberate resend is already with the provider.
       outcome_unknown_seen = false, pinned_account = NULL, sent_account = NULL, moved_unsettled = false
     WHERE id = $1 AND state <> 'pending' AND recipient IS NOT NULL`,
    [id, now],
  );
  return rowCount === 1;
}

/**
 * Pending intents per account they are on (`first` for those not yet
 * leased, and for those on an account no longer configured: where they
 * start). A count over the pending part of the outbox, for operators'
 * reads (`leasehold accounts`, GET /v1/accounts), not for every scrape.
 */
export async function intentsPendingByAccount(db: Queryable, schema: string, known: readonly string[], first: string): Promise<Map<string, number>> {
  const { rows } = await db.query<{ account: string; n: number }>(
    `SELECT CASE WHEN account = ANY ($1::text[]) THEN account ELSE $2 END AS account, count(*)::int AS n
       FROM ${ident(schema)}.email_outbox WHERE state = 'pending' GROUP BY 1`,
    [known, first],
  );
  return new Map(rows.map((r) => [r.account, r.n]));
}

/**
 * An operator moves a pending intent to `account`, even one pinned to its
 * account by an unknown outcome. Not while a lease on it is live. The
 * unknown outcome stays remembered (outcome_unknown_seen), so an acceptance
 * on the new account is flagged possible_duplicate: the old account may
 * have sent it too. Returns whether it moved.
 */
export async function intentsMove(db: Queryable, schema: string, id: string, account: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE ${ident(schema)}.email_outbox SET account = $2, pinned_account = NULL, available_at = least(available_at, now()),
            moved_unsettled = moved_unsettled OR outcome_unknown_seen OR lease_token IS NOT NULL
      WHERE id = $1 AND state = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at <= now())`,
    [id, account],
  );
  return rowCount === 1;
}

/**
 * Seconds since the oldest pending intent was created (0 when none): one end
 * of the partial index email_outbox_pending_age, whatever the backlog or the
 * history. The backlog itself is counted in email_outbox_counts
 * (tables/intent-counts.ts), not here.
 */
/** The oldest pending intent's age, as one row (`pending_age`) through one end of the pending-age index, for the lane snapshot (read/stats.ts). */
export const intentsOldestPendingAgeSql = (s: string): string =>
  `SELECT extract(epoch FROM now() - min(created_at))::float8 AS pending_age FROM ${s}.email_outbox WHERE state = 'pending'`;

export const pendingAgeFromRow = (row: Record<string, unknown>): number => Math.max(0, (row['pending_age'] as number | null) ?? 0);
