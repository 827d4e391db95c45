import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import type { Attempt } from '../model/intent-states.js';
import { batchSizeSql } from './batches.js';

/**
 * Every statement on email_attempts: one row per send attempt of an intent,
 * the intent's full history. The delivery lane opens, closes and finishes
 * attempts inside the outbox's lease and record statements (one statement
 * each, so an attempt can never disagree with its intent); those parts are
 * written here as CTE fragments that tables/outbox.ts composes.
 */

interface AttemptRow {
  attempt: number;
  provider: string | null;
  account: string | null;
  started_at: Date;
  finished_at: Date | null;
  outcome: Attempt['outcome'];
  outcome_unknown: boolean;
  provider_status: number | null;
  provider_code: string | null;
  receipt: string | null;
  error: string | null;
  duration_ms: number | null;
  batch_id?: string | null;
  batch_members?: number | null;
}

export function attemptFromRow(row: AttemptRow): Attempt {
  return {
    attempt: row.attempt,
    provider: row.provider,
    account: row.account,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    outcome: row.outcome,
    outcomeUnknown: row.outcome_unknown,
    providerStatus: row.provider_status,
    providerCode: row.provider_code,
    receipt: row.receipt,
    error: row.error,
    durationMs: row.duration_ms,
    batchId: row.batch_id ?? null,
    batchMembers: row.batch_members ?? null,
  };
}

export async function attemptsList(db: Queryable, schema: string, intentId: string): Promise<Attempt[]> {
  const { rows } = await db.query<AttemptRow>(
    `SELECT attempt, provider, account, started_at, finished_at, outcome, outcome_unknown, provider_status, provider_code,
            receipt, error, duration_ms, batch_id, ${batchSizeSql(ident(schema), 'batch_id')} AS batch_members
       FROM ${ident(schema)}.email_attempts WHERE intent_id = $1 ORDER BY attempt`,
    [intentId],
  );
  return rows.map(attemptFromRow);
}

/**
 * Finished send attempts by outcome over the last minute and the last hour,
 * in one pass over the recent attempts (email_attempts_finished index).
 */
export async function attemptsRecentOutcomes(
  db: Queryable,
  schema: string,
): Promise<{ lastMinute: Record<string, number>; lastHour: Record<string, number> }> {
  const { rows } = await db.query<{ outcome: string; minute: number; hour: number }>(
    `SELECT outcome,
            (count(*) FILTER (WHERE finished_at >= now() - interval '1 minute'))::int AS minute,
            count(*)::int AS hour
       FROM ${ident(schema)}.email_attempts
      WHERE finished_at >= now() - interval '1 hour'
      GROUP BY outcome ORDER BY outcome`,
  );
  return {
    lastMinute: Object.fromEntries(rows.filter((r) => r.minute > 0).map((r) => [r.outcome, r.minute])),
    lastHour: Object.fromEntries(rows.map((r) => [r.outcome, r.hour])),
  };
}

/** Attempts finished in the last minute per account, by outcome (the email_attempts_finished index). */
export async function attemptsLastMinuteByAccount(db: Queryable, schema: string): Promise<Map<string, Record<string, number>>> {
  const { rows } = await db.query<{ account: string | null; outcome: string; n: number }>(
    `SELECT coalesce(account, 'default') AS account, outcome, count(*)::int AS n
       FROM ${ident(schema)}.email_attempts
      WHERE finished_at >= now() - interval '1 minute'
      GROUP BY 1, 2`,
  );
  const out = new Map<string, Record<string, number>>();
  for (const row of rows) {
    const counts = out.get(row.account!) ?? {};
    counts[row.outcome] = row.n;
    out.set(row.account!, counts);
  }
  return out;
}

/**
 * Send attempts per second by outcome, counted at the second each attempt
 * started (the limiter's moment: an attempt opens in the statement that
 * leases it, right after its permit), so a chart of them can be read
 * against the limit. Only finished attempts are counted; one in flight
 * appears once it is recorded, so a poller re-reads the last half minute.
 */
export interface SendRateBin {
  /** Unix second. */
  t: number;
  outcomes: Record<string, number>;
}

export const SEND_RATE_MAX_SECONDS = 3600;

// An attempt finishes at most the send timeout (under the lease) after it
// started; the finished_at index narrows the scan with this much margin.
const FINISH_MARGIN_S = 120;

export async function attemptsPerSecond(db: Queryable, schema: string, seconds: number): Promise<{ now: number; bins: SendRateBin[] }> {
  const { rows } = await db.query<{ now: number; t: number | null; outcome: string | null; n: number | null }>(
    `WITH clock AS (SELECT floor(extract(epoch FROM now()))::float8 AS now),
          recent AS (
            SELECT floor(extract(epoch FROM a.started_at))::float8 AS t, a.outcome, count(*)::int AS n
              FROM ${ident(schema)}.email_attempts a
             WHERE a.finished_at >= now() - make_interval(secs => $1::float8 + $2::float8)
               AND a.started_at >= to_timestamp((SELECT now FROM clock) - $1::float8)
             GROUP BY 1, 2
          )
     SELECT clock.now, recent.t, recent.outcome, recent.n FROM clock LEFT JOIN recent ON true ORDER BY recent.t, recent.outcome`,
    [seconds, FINISH_MARGIN_S],
  );
  const bins = new Map<number, SendRateBin>();
  for (const row of rows) {
    if (row.t === null || row.n === null) continue;
    const bin = bins.get(row.t) ?? { t: row.t, outcomes: {} };
    bin.outcomes[row.outcome ?? 'unknown'] = row.n;
    bins.set(row.t, bin);
  }
  return { now: rows[0]?.now ?? Math.floor(Date.now() / 1000), bins: [...bins.values()] };
}

// ---------------------------------------------------------------------------
// Fragments of the outbox's lease and record statements (tables/outbox.ts).
// Each is one CTE body; the caller names the CTE and supplies the SQL
// expressions it refers to (its own parameters and CTE names).

/** Close the unfinished attempt of each intent in `ids` (a previous lease that expired): ambiguous. */
export const attemptsCloseExpired = (s: string, ids: string, now: string): string =>
  `UPDATE ${s}.email_attempts a SET outcome = 'lease_expired', outcome_unknown = true, finished_at = ${now},
          error = 'lease expired before a result was recorded'
    WHERE a.intent_id = ANY (${ids}) AND a.finished_at IS NULL`;

/** Open one attempt per leased intent (`leased` has id, attempts and batch_id: the open batch it was leased through), owned by `worker` (an int, or NULL for none). */
export const attemptsOpen = (s: string, leased: string, token: string, provider: string, account: string, now: string, worker: string): string =>
  `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, account, started_at, worker, batch_id)
   SELECT l.id, l.attempts, ${token}, ${provider}, ${account}, ${now}, ${worker}, l.batch_id FROM ${leased} l`;

/**
 * The open attempts (leases in flight) of owners not in `live` (a subquery
 * with an int column `owner`: the workers alive now), restricted to the
 * owners in `owners` (an int[] expression) when given: intent_id,
 * lease_token and worker, from the small index of open attempts.
 */
export const attemptsOpenOfGoneOwners = (s: string, live: string, owners?: string): string =>
  `SELECT a.intent_id, a.lease_token, a.worker
     FROM ${s}.email_attempts a
    WHERE a.finished_at IS NULL AND a.worker IS NOT NULL
      ${owners ? `AND a.worker = ANY (${owners})` : ''}
      AND NOT EXISTS (SELECT 1 FROM (${live}) live WHERE live.owner = a.worker)`;

/**
 * Write each result (`results` has the unnested result columns) onto its
 * attempt. An acceptance is a fact and lands even on an attempt already
 * closed as lease_expired; anything else only on an unfinished attempt.
 */
export const attemptsFinish = (s: string, results: string, ids: string, now: string): string =>
  `UPDATE ${s}.email_attempts a SET
          outcome = r.outcome, finished_at = ${now}, outcome_unknown = r.unknown,
          provider_status = r.status, provider_code = r.code, receipt = r.receipt,
          error = r.error, duration_ms = r.duration_ms
     FROM ${results} r
    WHERE a.intent_id = r.id AND a.attempt = r.attempt AND a.intent_id = ANY (${ids})
      AND (a.finished_at IS NULL OR r.outcome = 'accepted')`;
