import type { Queryable } from '../../db/pool.js';
import { ident } from '../../db/pool.js';
import type { Suppression } from '../../model/suppression-reasons.js';
import { attemptsCloseExpired, attemptsOpen } from '../attempts.js';
import { presenceLiveOwnersSql } from '../../db/presence.js';
import { MESSAGE_LEASE_COLUMNS, messageFromLeaseRow, messagesJoinForLease, type StoredMessage } from '../messages.js';
import { permitGrantColumnsSql, permitGrantFromRow, rateLimiterRefundInLease, rateLimiterSpendSql, rateLimiterTakeDecisionSql, type PermitGrant, type TakeInputs } from '../rate-limiter.js';
import { LimiterMissingError } from '../../errors.js';
import { batchesDueSql, batchPositionSql } from '../batches.js';
import { fairNextSql, oneTenantNextSql, randomTenantStart } from './fair.js';
import { DEFAULT_ACCOUNT } from '../../model/accounts.js';
import { tenantSenderJoinForLease, TENANT_SENDER_LEASE_COLUMNS } from '../tenants.js';
import { SUPPRESSION_LEASE_COLUMNS, suppressionFromLeaseRow, suppressionKeyInSql, suppressionsJoinForLease } from '../suppressions.js';

/**
 * email_outbox, the delivery lane's lease (tables/outbox.ts is the table's
 * module; ./lane.ts has the rest of the lanes' statements, ./fair.ts the
 * lease's tenant-sharing part).
 */

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
  /** The tenant's own sender and reply-to (tenant_policies), read with the lease for a message rendered now; undefined: not read. */
  sender?: { from: string | null; replyTo: string | null };
}

export type LeaseOptions = {
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
  };

/**
 * Lease up to `limit` due pending intents for `leaseMs` under `token`, and
 * open one email_attempts row per intent (and give back the limiter permits
 * it did not use), in one statement that also brings what the send needs: each intent's stored message (or its hold's facts to
 * render one from) and its recipient's suppression.
 *
 * A lease writes only columns no index covers (token, expiry, counters), so
 * on a page with room (half-full pages, migrations 0015 and 0031) it is a HOT update: no
 * index entry is written. Due means pending, available and not under a live
 * lease, so an expired lease is simply due again, at its old place in line.
 * A previous lease's unfinished attempt is closed as `lease_expired`, and
 * that ambiguity is remembered on the intent (`outcome_unknown_seen`), so
 * the flag costs one column read per lease, not a walk through the history.
 */
export async function intentsLease(db: Queryable, schema: string, lease: LeaseOptions): Promise<LeasedIntent[]> {
  return (await leaseStatement(db, schema, lease, 'fair'))!;
}

/**
 * intentsLease for a fleet of one account (no `route`, no `batches`) in
 * the common case: at most one tenant has pending email, and it has no
 * policy. It then takes exactly what the fair lease would (that tenant's
 * oldest leasable intents; fair.ts oneTenantNextSql) in a statement that
 * plans in about a third of the time. Returns null, having leased nothing
 * and given back no permit, when the case does not hold in its snapshot:
 * lease with intentsLease then.
 */
export async function intentsLeaseOneTenant(
  db: Queryable,
  schema: string,
  lease: Omit<LeaseOptions, 'route' | 'batches' | 'tenantStart'>,
): Promise<LeasedIntent[] | null> {
  return leaseStatement(db, schema, lease, 'one-tenant');
}

/**
 * intentsLeaseOneTenant that takes its own permits first, in the same
 * statement: one round trip for the take and the lease of a round on an
 * account where a permit is an email (no batches). It locks the account's
 * limiter row, grants at most `limit` permits (as rateLimiterTake: pauses,
 * cooldown, daily quota), leases at most that many intents, and writes the
 * row once, spending one permit per leased intent. When the one-tenant case
 * does not hold (`intents` null) it spends the whole grant, as a take
 * would: the fair lease that follows gives back what it does not use.
 * Throws LimiterMissingError when the account has no limiter row.
 */
export async function intentsLeaseOneTenantTaking(
  db: Queryable,
  schema: string,
  lease: Omit<LeaseOptions, 'route' | 'batches' | 'tenantStart' | 'permits'> & { dailyQuota?: number },
): Promise<{ grant: PermitGrant; intents: LeasedIntent[] | null }> {
  let grant: PermitGrant | undefined;
  const intents = await leaseStatement(db, schema, lease, 'one-tenant', {
    dailyQuota: lease.dailyQuota ?? null,
    read: (row) => (grant = permitGrantFromRow(row, lease.limit, TAKE_PREFIX)),
  });
  if (!grant) throw new LimiterMissingError(schema, lease.account ?? DEFAULT_ACCOUNT);
  return { grant, intents };
}

/** The take's columns in a taking lease's rows. */
const TAKE_PREFIX = 'take_';

/**
 * The lease's owner as a one-column (`owner`) query: `owner` (an int
 * expression, the worker's presence id or NULL) only while its presence lock
 * is held now, else no row. A worker that has not yet noticed its session is
 * gone (a partition) takes leases nobody would reclaim early, instead of ones
 * that look abandoned the moment they are taken. `schema` is a text expression.
 */
export const leaseOwnerSql = (owner: string, schema: string): string =>
  `SELECT ${owner}::int AS owner WHERE ${owner}::int IS NOT NULL AND EXISTS (
         SELECT 1 FROM (${presenceLiveOwnersSql(`${schema}::text`)}) live WHERE live.owner = ${owner}::int)`;

async function leaseStatement(
  db: Queryable,
  schema: string,
  lease: LeaseOptions,
  form: 'fair' | 'one-tenant',
  /** The one-tenant form takes its permits itself: the take's inputs, and where its grant is read. */
  take?: { dailyQuota: number | null; read: (row: Record<string, unknown>) => void },
): Promise<LeasedIntent[] | null> {
  const s = ident(schema);
  // The take reads the database's clock, as rateLimiterTake does for the lane; the lease's time may be the caller's.
  const taking: TakeInputs = { account: '$10', want: '$1', now: 'NULL', dailyQuota: '$16', emailsPerPermit: '1' };
  const next = lease.batches && form === 'fair'
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
    : form === 'one-tenant'
      ? // Taking: at most what it granted (none without a limiter row: LIMIT NULL would be no limit).
        oneTenantNextSql(s, take ? 'coalesce((SELECT granted FROM decision), 0)' : undefined)
      : fairNextSql(s);
  const unused = '(coalesce($6::int, 0) - (SELECT count(*) FROM leased)::int)';
  // The one-tenant form that found other tenants leased nothing and gives nothing back: the fair lease after it spends the take.
  // It answers its case in a row of its own when nothing is leased; the
  // OFFSET 0 keeps the leased rows' joins planned on their own (flattened
  // into the join with one_tenant they cost 0.4 ms more to plan).
  const refund = form === 'one-tenant' ? `(CASE WHEN (SELECT holds FROM one_tenant) THEN ${unused} ELSE 0 END)` : unused;
  // Taking its own permits: one write of the limiter row, spending one per
  // leased intent (the whole grant when the case did not hold: the fair
  // lease after it spends that).
  const limiterWrite = take
    ? rateLimiterSpendSql(s, '(CASE WHEN (SELECT holds FROM one_tenant) THEN (SELECT count(*) FROM leased)::int ELSE (SELECT granted FROM decision) END)')
    : rateLimiterRefundInLease(s, '$10', refund, '$7::timestamptz');
  const picked = `SELECT l.*, r.expires_at AS hold_expires_at, r.expired_at AS hold_expired_at, r.confirmed_at AS hold_confirmed_at,
            r.traceparent AS hold_traceparent,
            ${batchPositionSql(s, 'l.batch_id', 'l.id')} AS batch_position,
            CASE WHEN m.intent_id IS NULL THEN r.metadata END AS metadata,
            ${MESSAGE_LEASE_COLUMNS}, ${SUPPRESSION_LEASE_COLUMNS}, ${TENANT_SENDER_LEASE_COLUMNS}
       -- Plain key joins: the planner takes leased for one row and probes each
       -- table's primary key per leased intent. (An = ANY guard here, as on the
       -- UPDATE above, is checked against every key of every probe: a
       -- quadratic 0.8 s for a batch of 1,000.)
       FROM leased l
       JOIN ${s}.support_reservations r ON r.id = l.reservation_id
       ${messagesJoinForLease(s, 'l.id')}
       ${suppressionsJoinForLease(s, 'l.su_key')}
       ${tenantSenderJoinForLease(s, 'l.tenant', 'm.intent_id IS NULL')}`;
  const { rows } = await db.query<Record<string, unknown>>(
    `WITH RECURSIVE ${take ? `${rateLimiterTakeDecisionSql(s, taking)}, ` : ''}clock AS (
       -- (Each mode reads only some of the routing and batch parameters; all are typed here.)
       -- Taking its permits, the lease's time is the take's (after the limiter row's lock), unless given.
       SELECT coalesce($4::timestamptz, ${take ? '(SELECT t FROM decision)' : 'now()'}) AS now, $11::text[] AS route_from, $12::text[] AS route_known,
              $13::text AS route_first, $14::int AS batch_emails, $15::text AS tenant_start, $16::int AS daily_quota,
              $6::int AS permits_granted, $7::timestamptz AS permits_bucket_time
     ), owner AS (
       ${leaseOwnerSql('$8', '$9')}
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
       -- Only an intent leased before can have an attempt open (its first lease
       -- opens attempt 1): a round of first attempts skips the scan whole.
       ${attemptsCloseExpired(s, 'ARRAY(SELECT l.id FROM leased l WHERE l.attempts > 1)', '(SELECT clock.now FROM clock)')}
         AND EXISTS (SELECT 1 FROM leased l WHERE l.attempts > 1)
     ), opened AS (
       ${attemptsOpen(s, 'leased', '$3::uuid', '$5', '$10', '(SELECT clock.now FROM clock)', '(SELECT owner FROM owner)')}
     ), limiter AS (
       ${limiterWrite}
     )
     ${
       take
         ? `SELECT ot.holds AS one_tenant_holds, ${permitGrantColumnsSql('d', 'w.tokens', taking, TAKE_PREFIX)}, x.*
              FROM one_tenant ot CROSS JOIN decision d CROSS JOIN limiter w LEFT JOIN (${picked} OFFSET 0) x ON true`
         : form === 'one-tenant'
           ? `SELECT ot.holds AS one_tenant_holds, x.* FROM one_tenant ot LEFT JOIN (${picked} OFFSET 0) x ON true`
           : picked
     }`,
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
      take?.dailyQuota ?? null,
    ],
  );
  if (take && rows[0]) take.read(rows[0]);
  // The one-tenant form answers one row even when it leased nothing: whether its case held.
  if (form === 'one-tenant' && rows[0]?.['one_tenant_holds'] !== true) return null;
  return rows.filter((row) => row['id'] !== null).map((row) => {
    const message = messageFromLeaseRow(row);
    return {
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
      message,
      metadata: row['metadata'] as Record<string, unknown> | null,
      suppression: suppressionFromLeaseRow(row, row['su_key'] !== null),
      batchId: (row['batch_id'] as string | null) ?? null,
      batchPosition: (row['batch_position'] as number | null) ?? null,
      sendAlone: row['send_alone'] as boolean,
      tenant: row['tenant'] as string,
      holdTraceparent: (row['hold_traceparent'] as string | null) ?? null,
      ...(message === null ? { sender: { from: (row['tp_from_address'] as string | null) ?? null, replyTo: (row['tp_reply_to'] as string | null) ?? null } } : {}),
    };
  });
}

