import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import type { AttemptOutcome, IntentState } from '../model/intent-states.js';

/**
 * The delivery lane's write statements on email_outbox and email_attempts.
 * Each is one set-based statement per batch.
 */

export interface LeasedIntent {
  id: string;
  reservation_id: string;
  recipient: string;
  template: string;
  /** This attempt's number (attempts after the lease incremented it). */
  attempts: number;
  failed_attempts: number;
  replays: number;
  hold_expires_at: Date;
  lease_expires_at: Date;
  /** The previous lease expired without a result: its holder died or stalled. */
  lease_was_expired: boolean;
  /**
   * Some earlier attempt of this round ended ambiguously (timeout, 5xx, or
   * never finished), however many clear answers came after it: the provider
   * may already hold the message.
   */
  previous_outcome_unknown: boolean;
}

/**
 * Lease up to `limit` due pending intents for `leaseMs` under `token`, and
 * open one email_attempts row per intent, in one statement. While leased,
 * available_at = lease_expires_at, so an expired lease is simply due again.
 * A previous lease's unfinished attempt is closed as `lease_expired`, and
 * that ambiguity is remembered on the intent (`outcome_unknown_seen`), so
 * the flag costs one column read per lease, not a walk through the history.
 */
export async function intentsLease(
  db: Queryable,
  schema: string,
  lease: { limit: number; leaseMs: number; token: string; provider: string; now: Date | null },
): Promise<LeasedIntent[]> {
  const s = ident(schema);
  const { rows } = await db.query<LeasedIntent>(
    `WITH clock AS (
       SELECT coalesce($4::timestamptz, now()) AS now
     ), next AS (
       SELECT o.id, o.lease_token AS old_token
         FROM ${s}.email_outbox o, clock
        WHERE o.state = 'pending' AND o.available_at <= clock.now
        ORDER BY o.available_at
        LIMIT $1
          FOR UPDATE OF o SKIP LOCKED
     ), leased AS (
       UPDATE ${s}.email_outbox o SET
              lease_token = $3::uuid,
              lease_expires_at = clock.now + make_interval(secs => $2::float8 / 1000),
              available_at = clock.now + make_interval(secs => $2::float8 / 1000),
              attempts = o.attempts + 1,
              lease_expirations = o.lease_expirations + (next.old_token IS NOT NULL)::int,
              -- A lease still set means its attempt never reported back (closed
              -- below as lease_expired): the provider may have accepted it.
              outcome_unknown_seen = o.outcome_unknown_seen OR next.old_token IS NOT NULL
         FROM next, clock, ${s}.support_reservations r
        -- The = ANY keeps the planner on primary-key lookups; joined on
        -- next.id alone it may hash-join against a scan of the whole outbox.
        WHERE o.id = next.id AND o.id = ANY (ARRAY(SELECT next.id FROM next)) AND r.id = o.reservation_id
        RETURNING o.id, o.reservation_id, o.recipient, o.template, o.attempts, o.failed_attempts, o.replays,
                  r.expires_at AS hold_expires_at, o.lease_expires_at,
                  next.old_token IS NOT NULL AS lease_was_expired, o.outcome_unknown_seen AS previous_outcome_unknown
     ), closed AS (
       UPDATE ${s}.email_attempts a SET outcome = 'lease_expired', outcome_unknown = true, finished_at = clock.now,
              error = 'lease expired before a result was recorded'
         FROM clock
        WHERE a.intent_id = ANY (ARRAY(SELECT next.id FROM next)) AND a.finished_at IS NULL
     ), opened AS (
       INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at)
       SELECT l.id, l.attempts, $3::uuid, $5, clock.now FROM leased l, clock
     )
     SELECT * FROM leased`,
    [lease.limit, lease.leaseMs, lease.token, lease.now, lease.provider],
  );
  return rows;
}

/** One finished attempt, as the worker hands it to intentsRecord. */
export interface AttemptResult {
  id: string;
  token: string;
  attempt: number;
  outcome: AttemptOutcome;
  receipt: string | null;
  error: string | null;
  /** For rate_limited/failed: when the intent is due again, from now. */
  delayMs: number;
  providerStatus: number | null;
  providerCode: string | null;
  outcomeUnknown: boolean;
  durationMs: number;
  /** Accepted after an ambiguous earlier attempt by a provider that cannot deduplicate. */
  duplicateRisk: boolean;
  /** Not stored on the intent: the provider's own retry-after (rate_limited) or pause length (paused). */
  providerWaitMs?: number;
}

export interface RecordedResult {
  id: string;
  /** False when fenced: the lease had moved on and the outbox row was left alone. */
  applied: boolean;
  state: IntentState;
  attempts: number;
  possible_duplicate: boolean;
}

/**
 * Record a batch of attempt results in one statement.
 *
 * Fencing: release, reject and fail apply only while the intent is pending
 * under this worker's lease token; a worker whose lease expired changes
 * nothing. An acceptance is a fact and always applies: it marks the intent
 * sent even from a stale lease or after it went dead, and an acceptance of an
 * intent already sent is flagged as a possible duplicate. The attempt row
 * always gets the result.
 */
export async function intentsRecord(
  db: Queryable,
  schema: string,
  results: AttemptResult[],
  options: { maxAttempts: number; now: Date | null },
): Promise<RecordedResult[]> {
  if (results.length === 0) return [];
  const s = ident(schema);
  const col = <K extends keyof AttemptResult>(k: K) => results.map((r) => r[k]);
  const { rows } = await db.query<RecordedResult>(
    `WITH clock AS (
       SELECT coalesce($13::timestamptz, now()) AS now
     ), r AS (
       SELECT * FROM unnest($1::text[], $2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[], $7::float8[],
                            $8::int[], $9::text[], $10::bool[], $11::int[], $12::bool[])
         AS r(id, token, attempt, outcome, receipt, error, delay_ms, status, code, unknown, duration_ms, duplicate_risk)
     ), attempts AS (
       UPDATE ${s}.email_attempts a SET
              outcome = r.outcome, finished_at = clock.now, outcome_unknown = r.unknown,
              provider_status = r.status, provider_code = r.code, receipt = r.receipt,
              error = r.error, duration_ms = r.duration_ms
         FROM r, clock
        WHERE a.intent_id = r.id AND a.attempt = r.attempt AND a.intent_id = ANY ($1::text[])
          AND (a.finished_at IS NULL OR r.outcome = 'accepted')
     ), updated AS (
       UPDATE ${s}.email_outbox o SET
              state = CASE
                WHEN r.outcome = 'accepted' THEN 'sent'
                WHEN r.outcome = 'rejected' THEN 'rejected'
                WHEN r.outcome = 'failed' AND o.failed_attempts + 1 >= $14 THEN 'dead'
                ELSE 'pending' END,
              failed_attempts = o.failed_attempts + (r.outcome = 'failed')::int,
              available_at = CASE
                WHEN r.outcome IN ('rate_limited', 'failed') THEN clock.now + make_interval(secs => r.delay_ms / 1000)
                WHEN r.outcome IN ('paused', 'abandoned') THEN clock.now
                ELSE o.available_at END,
              sent_at = CASE WHEN r.outcome = 'accepted' THEN coalesce(o.sent_at, clock.now) ELSE o.sent_at END,
              receipt = CASE WHEN r.outcome = 'accepted' THEN coalesce(o.receipt, r.receipt) ELSE o.receipt END,
              finished_at = CASE
                WHEN r.outcome IN ('accepted', 'rejected') THEN coalesce(o.finished_at, clock.now)
                WHEN r.outcome = 'failed' AND o.failed_attempts + 1 >= $14 THEN clock.now
                ELSE NULL END,
              last_error = CASE WHEN r.outcome = 'accepted' THEN o.last_error ELSE r.error END,
              possible_duplicate = o.possible_duplicate OR (r.outcome = 'accepted' AND (o.state = 'sent' OR r.duplicate_risk)),
              outcome_unknown_seen = o.outcome_unknown_seen OR r.unknown,
              lease_token = NULL,
              lease_expires_at = NULL
         FROM r, clock
        WHERE o.id = r.id AND o.id = ANY ($1::text[])
          AND (r.outcome = 'accepted' OR (o.state = 'pending' AND o.lease_token = r.token))
        RETURNING o.id, o.state, o.attempts, o.possible_duplicate
     )
     SELECT r.id, u.id IS NOT NULL AS applied,
            coalesce(u.state, o.state) AS state, coalesce(u.attempts, o.attempts) AS attempts,
            coalesce(u.possible_duplicate, o.possible_duplicate) AS possible_duplicate
       FROM r
       LEFT JOIN updated u ON u.id = r.id
       JOIN ${s}.email_outbox o ON o.id = r.id AND o.id = ANY ($1::text[])`,
    [
      col('id'),
      col('token'),
      col('attempt'),
      col('outcome'),
      col('receipt'),
      col('error'),
      col('delayMs'),
      col('providerStatus'),
      col('providerCode'),
      col('outcomeUnknown'),
      col('durationMs'),
      col('duplicateRisk'),
      options.now,
      options.maxAttempts,
    ],
  );
  return rows;
}
