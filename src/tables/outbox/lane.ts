import type { Queryable } from '../../db/pool.js';
import { ident } from '../../db/pool.js';
import { IntentState, type AttemptOutcome } from '../../model/intent-states.js';
import type { Suppression } from '../../model/suppression-reasons.js';
import { attemptsCloseExpired, attemptsFinish, attemptsOpen, attemptsOpenOfGoneOwners } from '../attempts.js';
import { presenceLiveOwnersSql } from '../../db/presence.js';
import { MESSAGE_LEASE_COLUMNS, messageFromLeaseRow, messagesJoinForLease, type StoredMessage } from '../messages.js';
import { rateLimiterRefundInLease } from '../rate-limiter.js';
import { batchesCloseSql, batchesDueSql, batchPositionSql } from '../batches.js';
import { fairNextSql, randomTenantStart } from './fair.js';
import { DEFAULT_ACCOUNT } from '../../model/accounts.js';
import { SUPPRESSION_LEASE_COLUMNS, suppressionFromLeaseRow, suppressionKeyInSql, suppressionsJoinForLease } from '../suppressions.js';

/**
 * email_outbox, the lanes' statements (tables/outbox.ts is the table's
 * module; the operators' reads and changes are in ./operator.ts). The expiry
 * lane creates intents inside its expire statement (intentsInsertExpired, a
 * CTE fragment tables/holds.ts composes, so the state change and its intent
 * commit as one statement); the delivery lane leases, reclaims and records
 * them, each one set-based statement per batch that also opens or finishes
 * the intent's email_attempts rows (fragments from tables/attempts.ts).
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
 * intents created.
 */
export const intentsInsertExpired = (s: string, expired: string, prefix: string, template: string, deadlineSeconds: string): string =>
  `INSERT INTO ${s}.email_outbox (id, reservation_id, tenant, recipient, template, state, available_at, created_at, send_by)
   SELECT ${prefix} || e.id, e.id, e.tenant, e.customer_email, ${template}, 'pending', e.expired_at, e.expired_at,
          e.expired_at + make_interval(secs => ${deadlineSeconds})
     FROM ${expired} e
   ON CONFLICT (id) DO NOTHING
   RETURNING id, reservation_id`;

export interface LeasedIntent {
  id: string;
  holdId: string;
  recipient: string;
  /** The message kind (email_outbox.template). */
  template: string;
  /** This attempt's number (attempts after the lease incremented it). */
  attempts: number;
  failedAttempts: number;
  replays: number;
  holdExpiresAt: Date;
  holdExpiredAt: Date | null;
  holdConfirmedAt: Date | null;
  leaseExpiresAt: Date;
  /** The previous lease expired without a result: its holder died or stalled. */
  leaseWasExpired: boolean;
  /**
   * Some earlier attempt of this round ended ambiguously (timeout, 5xx, or
   * never finished), however many clear answers came after it: the provider
   * may already hold the message.
   */
  previousOutcomeUnknown: boolean;
  /**
   * The account an attempt with an unknown outcome went through (null:
   * none, or an operator moved the intent since): only there can its
   * idempotency key or lookup settle it.
   */
  pinnedAccount: string | null;
  /** An operator moved it off an account where its outcome was unknown: that account may have sent it. */
  movedUnsettled: boolean;
  /** The message stored at the first lease, or null: render it now (from `metadata`). */
  message: StoredMessage | null;
  /** The hold's metadata, when there is no stored message yet. */
  metadata: Record<string, unknown> | null;
  /** The recipient's suppression (null: none), or undefined when the lease could not check it in SQL. */
  suppression: Suppression | null | undefined;
  /** The open batch it is bound to (leased through it, whole: tables/batches.ts), or null. */
  batchId: string | null;
  /** Its place in that batch's request (0-based), or null. */
  batchPosition: number | null;
  /** A batch carrying it was refused without naming the email at fault: it goes alone. */
  sendAlone: boolean;
  /** Whose hold it is ('' : the empty tenant). */
  tenant: string;
  /** The hold's stored W3C traceparent (migration 0026), for the lane's spans to link to; null: none. */
  holdTraceparent?: string | null;
}

/**
 * Lease up to `limit` due pending intents for `leaseMs` under `token`, and
 * open one email_attempts row per intent (and give back the limiter permits
 * it did not use), in one statement that also brings what the send needs: each intent's stored message (or its hold's facts to
 * render one from) and its recipient's suppression.
 *
 * A lease writes only columns no index covers (token, expiry, counters), so
 * on a page with room (fillfactor, migration 0015) it is a HOT update: no
 * index entry is written. Due means pending, available and not under a live
 * lease, so an expired lease is simply due again, at its old place in line.
 * A previous lease's unfinished attempt is closed as `lease_expired`, and
 * that ambiguity is remembered on the intent (`outcome_unknown_seen`), so
 * the flag costs one column read per lease, not a walk through the history.
 */
export async function intentsLease(
  db: Queryable,
  schema: string,
  lease: {
    limit: number;
    leaseMs: number;
    token: string;
    provider: string;
    /** The lease's time (its attempts' started_at): a Date, timestamptz text, or null for the database's now(). */
    now: Date | string | null;
    /** The limiter take this lease spends: permits it does not use go back in the same statement (rateLimiterRefundInLease). */
    permits?: { granted: number; bucketTime: string };
    /** The leasing worker's presence id (db/presence.ts), named on each attempt; absent: no owner, reclaimed only by expiry. */
    owner?: number;
    /** The account these attempts go through (its limiter gave the permits); default `default`. */
    account?: string;
    /**
     * Which intents this account may take (delivery/routing.ts); absent:
     * every due intent (a fleet with one account).
     */
    route?: {
      /** Intents on these accounts (not pinned elsewhere) are routed to this one. */
      from: readonly string[];
      /** The accounts configured now; an intent on any other counts as on `first`. */
      known: readonly string[];
      first: string;
    };
    /**
     * Lease this account's open batches instead of single intents: up to
     * `limit` whole batches, oldest first, whose members are all due, and at
     * most `emails` members in all (batchesDueSql). Every member of a
     * batch is leased, or none.
     */
    batches?: { emails: number };
    /** Where the round's walk over tenants starts (default: a random point; tests fix it). */
    tenantStart?: string;
  },
): Promise<LeasedIntent[]> {
  const s = ident(schema);
  const next = lease.batches
    ? `${batchesDueSql(s, '$10', '$1', '$14', 'clock.now')}, next AS (
       -- Every member, locked without skipping (the batch's lock makes this
       -- worker the only one leasing them); the due test is checked again on
       -- the locked row, so a batch another statement has just leased is not
       -- leased a second time.
       SELECT o.id, o.lease_token AS old_token
         FROM ${s}.email_outbox o, clock
        WHERE o.id = ANY (ARRAY(SELECT unnest(members) FROM due_batches)) AND o.batch_id IN (SELECT id FROM due_batches)
          AND o.state = 'pending' AND o.available_at <= clock.now
          AND (o.lease_expires_at IS NULL OR o.lease_expires_at <= clock.now)
          FOR UPDATE OF o
     )`
    : fairNextSql(s);
  const { rows } = await db.query<Record<string, unknown>>(
    `WITH RECURSIVE clock AS (
       -- (Each mode reads only some of the routing and batch parameters; all are typed here.)
       SELECT coalesce($4::timestamptz, now()) AS now, $11::text[] AS route_from, $12::text[] AS route_known,
              $13::text AS route_first, $14::int AS batch_emails, $15::text AS tenant_start
     ), owner AS (
       -- The owner is named only while its presence lock is held now: a
       -- worker that has not yet noticed its session is gone (a partition)
       -- takes leases nobody would reclaim early, instead of ones that
       -- look abandoned the moment they are taken.
       SELECT $8::int AS owner WHERE $8::int IS NOT NULL AND EXISTS (
         SELECT 1 FROM (${presenceLiveOwnersSql('$9')}) live WHERE live.owner = $8::int)
     ), ${next}, leased AS (
       UPDATE ${s}.email_outbox o SET
              lease_token = $3::uuid,
              lease_expires_at = clock.now + make_interval(secs => $2::float8 / 1000),
              attempts = o.attempts + 1,
              lease_expirations = o.lease_expirations + (next.old_token IS NOT NULL)::int,
              -- A lease still set means its attempt never reported back (closed
              -- below as lease_expired): the provider may have accepted it.
              outcome_unknown_seen = o.outcome_unknown_seen OR next.old_token IS NOT NULL,
              pinned_account = CASE WHEN next.old_token IS NOT NULL THEN coalesce(o.pinned_account, o.account, $10)
                                    ELSE o.pinned_account END,
              account = $10
         FROM next, clock
        -- The = ANY keeps the planner on primary-key lookups; joined on
        -- next.id alone it may hash-join against a scan of the whole outbox.
        WHERE o.id = next.id AND o.id = ANY (ARRAY(SELECT next.id FROM next))
        RETURNING o.id, o.reservation_id, o.recipient, o.template, o.attempts, o.failed_attempts, o.replays,
                  o.lease_expires_at, next.old_token IS NOT NULL AS lease_was_expired,
                  o.outcome_unknown_seen AS previous_outcome_unknown, o.pinned_account, o.moved_unsettled, o.batch_id, o.send_alone, o.tenant,
                  ${suppressionKeyInSql('o.recipient')} AS su_key
     ), closed AS (
       ${attemptsCloseExpired(s, 'ARRAY(SELECT next.id FROM next)', '(SELECT clock.now FROM clock)')}
     ), opened AS (
       ${attemptsOpen(s, 'leased', '$3::uuid', '$5', '$10', '(SELECT clock.now FROM clock)', '(SELECT owner FROM owner)')}
     ), refunded AS (
       ${rateLimiterRefundInLease(s, '$10', '(coalesce($6::int, 0) - (SELECT count(*) FROM leased)::int)', '$7::timestamptz')}
     )
     SELECT l.*, r.expires_at AS hold_expires_at, r.expired_at AS hold_expired_at, r.confirmed_at AS hold_confirmed_at,
            r.traceparent AS hold_traceparent,
            ${batchPositionSql(s, 'l.batch_id', 'l.id')} AS batch_position,
            CASE WHEN m.intent_id IS NULL THEN r.metadata END AS metadata,
            ${MESSAGE_LEASE_COLUMNS}, ${SUPPRESSION_LEASE_COLUMNS}
       -- Plain key joins: the planner takes leased for one row and probes each
       -- table's primary key per leased intent. (An = ANY guard here, as on the
       -- UPDATE above, is checked against every key of every probe: a
       -- quadratic 0.8 s for a batch of 1,000.)
       FROM leased l
       JOIN ${s}.support_reservations r ON r.id = l.reservation_id
       ${messagesJoinForLease(s, 'l.id')}
       ${suppressionsJoinForLease(s, 'l.su_key')}`,
    [
      lease.limit,
      lease.leaseMs,
      lease.token,
      lease.now,
      lease.provider,
      lease.permits?.granted ?? null,
      lease.permits?.bucketTime ?? null,
      lease.owner ?? null,
      schema,
      lease.account ?? DEFAULT_ACCOUNT,
      lease.route?.from ?? null,
      lease.route?.known ?? null,
      lease.route?.first ?? null,
      lease.batches?.emails ?? null,
      // Where the walk over tenants starts (fairNextSql): a random point, so
      // no worker favours the tenants early in the alphabet.
      lease.tenantStart ?? randomTenantStart(),
    ],
  );
  return rows.map((row) => ({
    id: row['id'] as string,
    holdId: row['reservation_id'] as string,
    recipient: row['recipient'] as string,
    template: row['template'] as string,
    attempts: row['attempts'] as number,
    failedAttempts: row['failed_attempts'] as number,
    replays: row['replays'] as number,
    holdExpiresAt: row['hold_expires_at'] as Date,
    holdExpiredAt: row['hold_expired_at'] as Date | null,
    holdConfirmedAt: (row['hold_confirmed_at'] as Date | null) ?? null,
    leaseExpiresAt: row['lease_expires_at'] as Date,
    leaseWasExpired: row['lease_was_expired'] as boolean,
    previousOutcomeUnknown: row['previous_outcome_unknown'] as boolean,
    pinnedAccount: row['pinned_account'] as string | null,
    movedUnsettled: row['moved_unsettled'] as boolean,
    message: messageFromLeaseRow(row),
    metadata: row['metadata'] as Record<string, unknown> | null,
    suppression: suppressionFromLeaseRow(row, row['su_key'] !== null),
    batchId: (row['batch_id'] as string | null) ?? null,
    batchPosition: (row['batch_position'] as number | null) ?? null,
    sendAlone: row['send_alone'] as boolean,
    tenant: row['tenant'] as string,
    holdTraceparent: (row['hold_traceparent'] as string | null) ?? null,
  }));
}

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
       ${attemptsFinish(s, 'r', '$1::text[]', '(SELECT clock.now FROM clock)')}
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
        WHERE o.id = r.id AND o.id = ANY ($1::text[])
          AND (r.outcome = 'accepted' OR (o.state = 'pending' AND o.lease_token = r.token))
        RETURNING o.id, o.state, o.attempts, o.possible_duplicate, o.batch_id
     ), batches_closed AS (
       ${batchesCloseSql(s, '$17::uuid[]', 'updated')}
     )
     SELECT r.id, u.id IS NOT NULL AS applied,
            coalesce(u.state, o.state) AS state, coalesce(u.attempts, o.attempts) AS attempts,
            coalesce(u.possible_duplicate, o.possible_duplicate) AS "possibleDuplicate"
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
      results.map((r) => r.account ?? DEFAULT_ACCOUNT),
      results.map((r) => r.moveTo ?? null),
      [...new Set(results.flatMap((r) => (r.batchId ? [r.batchId] : [])))],
      results.map((r) => r.keepBatch ?? false),
      results.map((r) => r.keyUnusable ?? false),
      results.map((r) => r.sendAlone ?? false),
    ],
  );
  return rows;
}

export interface SweptIntent {
  id: string;
  holdId: string;
  template: string;
  tenant: string;
  /** voided (a reminder whose hold was confirmed or cancelled) or missed_deadline. */
  state: 'voided' | 'missed_deadline';
}

/**
 * End up to `limit` pending intents whose deadline (send_by) has passed and
 * that no live lease holds (nor an open batch, whose members go out
 * together or not at all): never sent. A reminder whose hold was confirmed
 * or cancelled meanwhile (it was in flight then, and came back unsent) is
 * voided; every other one missed its deadline. Oldest deadline first,
 * through email_outbox_deadline (migration 0024), skipping rows other
 * statements hold.
 */
export async function intentsSweepDeadlines(db: Queryable, schema: string, now: Date | null, limit: number): Promise<SweptIntent[]> {
  const s = ident(schema);
  const { rows } = await db.query<{ id: string; reservation_id: string; template: string; tenant: string; state: SweptIntent['state'] }>(
    `WITH clock AS (
       SELECT coalesce($1::timestamptz, now()) AS now
     ), past AS (
       SELECT o.id FROM ${s}.email_outbox o, clock
        WHERE o.state = 'pending' AND o.send_by IS NOT NULL AND o.send_by <= clock.now AND o.batch_id IS NULL
          AND (o.lease_token IS NULL OR o.lease_expires_at <= clock.now)
        ORDER BY o.send_by
        LIMIT $2
          FOR UPDATE OF o SKIP LOCKED
     ), swept AS (
       UPDATE ${s}.email_outbox o
        SET state = CASE WHEN o.template = 'reservation-reminder' AND r.status IN ('confirmed', 'cancelled') THEN 'voided' ELSE 'missed_deadline' END,
            finished_at = clock.now,
            last_error = CASE WHEN o.template = 'reservation-reminder' AND r.status IN ('confirmed', 'cancelled')
                              THEN 'its hold was ' || r.status || ' first'
                              ELSE 'not sent by its deadline ' || to_char(o.send_by AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END,
            lease_token = NULL, lease_expires_at = NULL
       FROM past, clock, ${s}.support_reservations r
      WHERE o.id = past.id AND r.id = o.reservation_id
      RETURNING o.id, o.reservation_id, o.template, o.tenant, o.state
     ), closed AS (
       -- A dead worker's lease: its attempt never reported back.
       ${attemptsCloseExpired(s, 'ARRAY(SELECT id FROM swept)', '(SELECT now FROM clock)')}
     )
     SELECT * FROM swept`,
    [now, limit],
  );
  return rows.map((r) => ({ id: r.id, holdId: r.reservation_id, template: r.template, tenant: r.tenant, state: r.state }));
}
