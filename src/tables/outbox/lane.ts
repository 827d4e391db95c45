import type { Queryable } from '../../db/pool.js';
import { ident } from '../../db/pool.js';
import { boolArray, float8Array, int4Array, textArray } from '../../db/binary-arrays.js';
import { IntentState, type AttemptOutcome } from '../../model/intent-states.js';
import { attemptsFinish, attemptsOpenOfGoneOwners } from '../attempts.js';
import { presenceLiveOwnersSql } from '../../db/presence.js';
import { batchesCloseSql } from '../batches.js';
import { DEFAULT_ACCOUNT } from '../../model/accounts.js';

/**
 * email_outbox, the lanes' statements (tables/outbox.ts is the table's
 * module; the operators' reads and changes are in ./operator.ts). The expiry
 * lane creates intents inside its expire statement (intentsInsertExpired, a
 * CTE fragment tables/holds.ts composes, so the state change and its intent
 * commit as one statement); the delivery lane leases them (./lease.ts),
 * reclaims and records them, each one set-based statement per batch that
 * also opens or finishes the intent's email_attempts rows (fragments from
 * tables/attempts.ts).
 *
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 */

/**
 * Insert one pending intent per row of `expired` (a CTE with id,
 * customer_email, tenant and expired_at of holds just expired), id
 * `<prefix><hold id>`, with its hold's tenant (so the delivery lane can tell
 * tenants apart from the outbox alone); the unique key is the final guard
 * against a second intent for one hold. Its deadline (send_by) is
 * `deadlineSeconds` after the expiry (NULL: none, LEASEHOLD_NOTICE_DEADLINE_S).
 * Returns id and reservation_id of the
 * intents created. With `lease` (tables/outbox/hand-off.ts
 * handOffInsertColumns, over the one row `handoff` as `h`), the intents
 * are inserted leased when the hand-off's test passed, and answer its
 * columns too.
 */
export const intentsInsertExpired = (
  s: string,
  expired: string,
  prefix: string,
  template: string,
  deadlineSeconds: string,
  lease?: { columns: string; values: string; returning: string },
): string =>
  `INSERT INTO ${s}.email_outbox (id, reservation_id, tenant, recipient, template, state, available_at, created_at, send_by${lease ? `, ${lease.columns}` : ''})
   SELECT ${prefix} || e.id, e.id, e.tenant, e.customer_email, ${template}, 'pending', e.expired_at, e.expired_at,
          e.expired_at + make_interval(secs => ${deadlineSeconds})${lease ? `, ${lease.values}` : ''}
     FROM ${expired} e${lease ? ', handoff h' : ''}
   ON CONFLICT (id) DO NOTHING
   RETURNING id, reservation_id${lease ? `, ${lease.returning}` : ''}`;

/**
 * The owners (worker ids) that hold leases in flight but whose presence lock
 * is free now: dead, or cut off from the database. A reclaimer confirms
 * them a moment later (intentsReclaimGone) before taking their leases, so
 * a worker whose session merely blinked (a backend purge it reconnects
 * from in milliseconds) keeps its leases.
 */
export async function intentsLeaseOwnersGone(db: Queryable, schema: string): Promise<number[]> {
  const s = ident(schema);
  const { rows } = await db.query<{ worker: number }>(
    `SELECT DISTINCT g.worker FROM (${attemptsOpenOfGoneOwners(s, presenceLiveOwnersSql('$1'))}) g`,
    [schema],
  );
  return rows.map((r) => r.worker);
}

/**
 * Reclaim the leases of `owners` whose presence lock is still free: end
 * each such lease now (lease_expires_at), so the next lease takes the
 * intent at its old place in line and records the reclaimed attempt
 * exactly like an expired one (lease_expired, outcome unknown; see
 * intentsLease). Only the lease the open attempt belongs to is ended (its
 * token must still be the intent's), and only while the intent is pending.
 * Fencing is the lease token's, as for an expiry: the owner, if it comes
 * back, records nothing on an intent someone else has leased since.
 */
export async function intentsReclaimGone(db: Queryable, schema: string, owners: number[]): Promise<Array<{ id: string; owner: number }>> {
  if (owners.length === 0) return [];
  const s = ident(schema);
  const { rows } = await db.query<{ id: string; worker: number }>(
    `WITH gone AS (${attemptsOpenOfGoneOwners(s, presenceLiveOwnersSql('$1'), '$2::int[]')})
     UPDATE ${s}.email_outbox o SET lease_expires_at = clock_timestamp() - interval '1 millisecond'
       FROM gone
      WHERE o.id = gone.intent_id AND o.lease_token = gone.lease_token
        AND o.state = 'pending' AND o.lease_expires_at > clock_timestamp()
     RETURNING o.id, gone.worker`,
    [schema, owners],
  );
  return rows.map((r) => ({ id: r.id, owner: r.worker }));
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
  /** The account the attempt went through (default `default`). */
  account?: string;
  /** The account the intent tries next: the request never left this one (connection refused, DNS, TLS). */
  moveTo?: string;
  /** The batch the attempt went in (tables/batches.ts); it closes once no member is bound to it. */
  batchId?: string;
  /** Stay bound to that batch: its outcome is unknown and only a resend of the whole batch under its key can settle it. */
  keepBatch?: boolean;
  /** The batch's key can no longer settle an unknown outcome: an acceptance from now on may be a duplicate. */
  keyUnusable?: boolean;
  /** Its batch was refused whole without naming the email at fault: send it alone from now on. */
  sendAlone?: boolean;
  /** Rejected because the provider holds the address inactive: suppress it (delivery/worker.ts). */
  suppressRecipient?: boolean;
}

export interface RecordedResult {
  id: string;
  /** False when fenced: the lease had moved on and the outbox row was left alone. */
  applied: boolean;
  state: IntentState;
  attempts: number;
  possibleDuplicate: boolean;
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
                            $8::int[], $9::text[], $10::bool[], $11::int[], $12::bool[], $15::text[], $16::text[],
                            $18::bool[], $19::bool[], $20::bool[])
         AS r(id, token, attempt, outcome, receipt, error, delay_ms, status, code, unknown, duration_ms, duplicate_risk,
              account, move_to, keep_batch, key_unusable, send_alone)
     ), attempts AS (
       ${attemptsFinish(s, 'r', 'ARRAY(SELECT r.id FROM r)', '(SELECT clock.now FROM clock)')}
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
              -- A second acceptance of a sent intent is a duplicate, unless it is
              -- the same one again (the same receipt: a provider replaying an
              -- idempotent request, or a record repeated after its answer was lost).
              possible_duplicate = o.possible_duplicate OR (r.outcome = 'accepted'
                AND ((o.state = 'sent' AND o.receipt IS DISTINCT FROM r.receipt) OR r.duplicate_risk)),
              outcome_unknown_seen = o.outcome_unknown_seen OR r.unknown,
              -- An unknown outcome pins the intent to its account until it is settled.
              pinned_account = CASE WHEN r.unknown THEN coalesce(o.pinned_account, r.account) ELSE o.pinned_account END,
              account = CASE WHEN r.move_to IS NOT NULL AND NOT r.unknown AND o.pinned_account IS NULL THEN r.move_to
                             ELSE o.account END,
              sent_account = CASE WHEN r.outcome = 'accepted' THEN coalesce(o.sent_account, r.account) ELSE o.sent_account END,
              -- Bound to its batch only while that batch may still settle it
              -- (not once settled, nor once dead).
              batch_id = CASE WHEN r.keep_batch AND r.outcome NOT IN ('accepted', 'rejected')
                               AND NOT (r.outcome = 'failed' AND o.failed_attempts + 1 >= $14) THEN o.batch_id END,
              -- Unbound while unsettled after an unknown outcome: only the
              -- batch's key could have told, so an acceptance from now on may
              -- be a duplicate.
              moved_unsettled = o.moved_unsettled OR r.key_unusable
                OR (o.batch_id IS NOT NULL AND NOT r.keep_batch AND r.outcome NOT IN ('accepted', 'rejected')
                    AND (o.outcome_unknown_seen OR r.unknown)),
              send_alone = o.send_alone OR r.send_alone,
              lease_token = NULL,
              lease_expires_at = NULL
         FROM r, clock
        -- ANY over a subquery, as the lease's: the planner, not knowing its
        -- length, stays on primary-key lookups; over $1 (a round's 500 known)
        -- it scanned an outbox of up to some 80,000 rows whole instead.
        WHERE o.id = r.id AND o.id = ANY (ARRAY(SELECT r.id FROM r))
          AND (r.outcome = 'accepted' OR (o.state = 'pending' AND o.lease_token = r.token))
        RETURNING o.id, o.state, o.attempts, o.possible_duplicate, o.batch_id
     ), batches_closed AS (
       ${batchesCloseSql(s, '$17::uuid[]', 'updated')}
     )
     -- A fenced result (not updated) reads its row as it stands, by primary
     -- key; the rest need no second look.
     SELECT u.id, true AS applied, u.state, u.attempts, u.possible_duplicate AS "possibleDuplicate" FROM updated u
     UNION ALL
     SELECT o.id, false, o.state, o.attempts, o.possible_duplicate
       FROM ${s}.email_outbox o
      WHERE o.id = ANY (ARRAY(SELECT r.id FROM r WHERE NOT EXISTS (SELECT 1 FROM updated u WHERE u.id = r.id)))`,
    // Binary arrays (db/binary-arrays.ts), but for the two uuid[] ones.
    [
      textArray(col('id')),
      col('token'),
      int4Array(col('attempt')),
      textArray(col('outcome')),
      textArray(col('receipt')),
      textArray(col('error')),
      float8Array(col('delayMs')),
      int4Array(col('providerStatus')),
      textArray(col('providerCode')),
      boolArray(col('outcomeUnknown')),
      int4Array(col('durationMs')),
      boolArray(col('duplicateRisk')),
      options.now,
      options.maxAttempts,
      textArray(results.map((r) => r.account ?? DEFAULT_ACCOUNT)),
      textArray(results.map((r) => r.moveTo ?? null)),
      [...new Set(results.flatMap((r) => (r.batchId ? [r.batchId] : [])))],
      boolArray(results.map((r) => r.keepBatch ?? false)),
      boolArray(results.map((r) => r.keyUnusable ?? false)),
      boolArray(results.map((r) => r.sendAlone ?? false)),
    ],
  );
  return rows;
}
