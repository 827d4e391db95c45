import { attemptsOpen } from '../attempts.js';
import { rateLimiterSpendSql, rateLimiterTakeDecisionSql } from '../rate-limiter.js';
import { SUPPRESSION_LEASE_COLUMNS, suppressionFromLeaseRow, suppressionKeyInSql } from '../suppressions.js';
import { tenantHasPolicySql, tenantNotPausedSql } from '../tenants.js';
import { dueUnleasedSql } from './fair.js';
import { leaseOwnerSql, type LeasedIntent } from './lease.js';

/**
 * email_outbox, the hand-off (tables/outbox.ts is the table's module): the
 * expiry statement (tables/holds/expiry.ts) leases the intents it creates
 * to the delivery worker of its own process, in the same statement, when
 * that worker has asked for them (delivery/hand-off.ts says when it does).
 * The email then goes from the expiry's commit straight to its render and
 * send, without a NOTIFY, a wake-up or a lease statement in between.
 *
 * The statement leases the batch's intents all or none, and only as the
 * delivery lane's own lease would have: the account's permits taken in the
 * statement (its limiter row locked, pauses, cooldown and daily quota read,
 * as rateLimiterTake does; a permit an email, or a request of a batch where
 * the account's unit is requests), one attempt opened per intent with the
 * owner named while its presence lock is held. It leases none when the permits
 * do not cover every intent, when older email is due and unleased (it goes
 * first, through the fair lease; a paused tenant's, or one past its
 * deadline, is not waiting on the lease), or when a tenant of the batch has a
 * policy (its cap, account or sender is the fair lease's to apply); those
 * intents are created pending, as without a hand-off, and NOTIFY wakes the
 * lane.
 */
export interface HandOffLease {
  /** The lease token of the round that will send them. */
  token: string;
  leaseMs: number;
  provider: string;
  account: string;
  /** The delivery worker's presence id, named on each attempt (absent: none). */
  owner?: number | undefined;
  /** Most intents leased: a batch that created more is handed none. */
  limit: number;
  /** The account's emails per UTC day; absent: none. */
  dailyQuota?: number | undefined;
  /** Emails one permit carries (a batch, where a permit is a request of batches; else 1). */
  emailsPerPermit: number;
}

/** Placeholders ($n) of the hand-off's parameters in the statement that composes it. */
export interface HandOffParams {
  token: string;
  leaseMs: string;
  provider: string;
  account: string;
  owner: string;
  schema: string;
  limit: string;
  dailyQuota: string;
  emailsPerPermit: string;
}

/** The hand-off's values, in HandOffParams order from `first` ($first is the token). */
export const handOffValues = (lease: HandOffLease, schema: string): unknown[] => [
  lease.token,
  lease.leaseMs,
  lease.provider,
  lease.account,
  lease.owner ?? null,
  schema,
  lease.limit,
  lease.dailyQuota ?? null,
  lease.emailsPerPermit,
];

/** HandOffParams numbered from $first. */
export function handOffParams(first: number): HandOffParams {
  const names = ['token', 'leaseMs', 'provider', 'account', 'owner', 'schema', 'limit', 'dailyQuota', 'emailsPerPermit'] as const;
  return Object.fromEntries(names.map((name, i) => [name, `$${first + i}`])) as unknown as HandOffParams;
}

/**
 * The CTEs deciding the hand-off, before the intents' insert: `handoff` is
 * one row, `ok` (lease them) and `t` (the lease's time: the permits' bucket
 * time, or `now` when the caller gave one). `expired` is the CTE of holds
 * just expired (customer_email, tenant); `now` the statement's time. The
 * limiter row is locked only when every other test passed (the CASE reads
 * `decision` last).
 */
export function handOffDecisionSql(s: string, p: HandOffParams, expired: string, now: string, callerNow: string): string {
  return `ho_want AS (
       -- The batch's emails, and the permits they cost: one each, or one per request of a batch.
       SELECT w.n, ceil(w.n::float8 / ${p.emailsPerPermit}::int)::int AS permits
         FROM (SELECT count(*)::int AS n FROM ${expired} e WHERE e.customer_email IS NOT NULL) w
     ), ${rateLimiterTakeDecisionSql(s, { account: `${p.account}::text`, want: '(SELECT permits FROM ho_want)', now: 'NULL', dailyQuota: p.dailyQuota, emailsPerPermit: p.emailsPerPermit })},
     ho_gate AS MATERIALIZED (
       SELECT CASE
                WHEN w.n = 0 OR w.n > ${p.limit}::int THEN false
                -- A tenant with a policy: its cap, account and sender are the fair lease's.
                WHEN EXISTS (SELECT 1 FROM (SELECT DISTINCT e.tenant FROM ${expired} e) e WHERE ${tenantHasPolicySql(s, 'e.tenant')}) THEN false
                -- Older email due and unleased goes first (this statement's own inserts are not in its snapshot);
                -- not what the lease would not take either: a paused tenant's, or one past its deadline.
                WHEN EXISTS (SELECT 1 FROM ${s}.email_outbox o WHERE ${dueUnleasedSql('o', now)} AND ${tenantNotPausedSql(s, 'o.tenant')}) THEN false
                -- Every permit, and room for every email in the day's quota.
                ELSE (SELECT d.granted = w.permits AND (${p.dailyQuota}::int IS NULL OR d.quota_used_today + w.n <= ${p.dailyQuota}::int) FROM decision d)
              END AS ok
         FROM ho_want w
     ), handoff AS (
       SELECT g.ok, CASE WHEN g.ok THEN coalesce(${callerNow}, (SELECT d.t FROM decision d)) END AS t,
              CASE WHEN g.ok THEN (SELECT d.t::text FROM decision d) END AS bucket_time
         FROM ho_gate g
     ), ho_owner AS (
       -- Named only while its presence lock is held now, as the lease does.
       ${leaseOwnerSql(p.owner, p.schema)}
     )`;
}

/** The lease columns of the intents' insert (tables/outbox/lane.ts intentsInsertExpired), from `h` (a row of `handoff`). */
export const handOffInsertColumns = (p: HandOffParams): { columns: string; values: string; returning: string } => ({
  columns: 'lease_token, lease_expires_at, attempts, account',
  values: `CASE WHEN h.ok THEN ${p.token}::uuid END, CASE WHEN h.ok THEN h.t + make_interval(secs => ${p.leaseMs}::float8 / 1000) END,
          CASE WHEN h.ok THEN 1 ELSE 0 END, CASE WHEN h.ok THEN ${p.account}::text END`,
  returning: `recipient, attempts, lease_expires_at, batch_id, lease_token IS NOT NULL AS handed, ${suppressionKeyInSql('recipient')} AS su_key`,
});

/** After the insert (`intents`): the handed intents' attempts opened, their permits spent (and their emails counted against the day's quota). */
export const handOffWritesSql = (s: string, p: HandOffParams): string =>
  `ho_opened AS (
       ${attemptsOpen(s, '(SELECT i.id, i.attempts, i.batch_id FROM intents i WHERE i.handed)', `${p.token}::uuid`, `${p.provider}::text`, `${p.account}::text`, '(SELECT t FROM handoff)', '(SELECT owner FROM ho_owner)')}
     ), ho_limiter AS (
       ${rateLimiterSpendSql(
         s,
         `ceil((SELECT count(*) FROM intents i WHERE i.handed)::float8 / ${p.emailsPerPermit}::int)::int`,
         '(SELECT count(*) FROM intents i WHERE i.handed)::int',
         '(SELECT ok FROM handoff)',
       )}
     )`;

/**
 * The handed intent's columns beside each expired hold (`e`, with
 * metadata and confirmed_at) in the statement's answer: `h` is its row of
 * `intents` when it was handed, `su` its suppression.
 */
export const handOffAnswerSql = (s: string): { columns: string; joins: string } => ({
  columns: `h.lease_expires_at AS handed_until, h.recipient AS handed_recipient, h.su_key AS handed_su_key, e.tenant AS handed_tenant,
            e.metadata AS handed_metadata, e.confirmed_at AS handed_confirmed_at, (SELECT bucket_time FROM handoff) AS handed_bucket_time,
            ${SUPPRESSION_LEASE_COLUMNS}`,
  // At most HandOffLease.limit handed rows: the nested loop over them stays small.
  joins: `LEFT JOIN intents h ON h.reservation_id = e.id AND h.handed
          LEFT JOIN ${s}.suppressions su ON su.address_hash = h.su_key`,
});

/** A handed intent as the delivery lane's lease gives one (its first attempt, no message stored yet), or undefined for a row that was not handed. */
export function handedIntentFromRow(row: Record<string, unknown>, template: string): LeasedIntent | undefined {
  const until = row['handed_until'] as Date | null | undefined;
  if (!until || row['intent_id'] === null) return undefined;
  return {
    id: row['intent_id'] as string,
    holdId: row['id'] as string,
    recipient: row['handed_recipient'] as string,
    template,
    attempts: 1,
    failedAttempts: 0,
    replays: 0,
    holdExpiresAt: row['expires_at'] as Date,
    holdExpiredAt: row['expired_at'] as Date,
    holdConfirmedAt: (row['handed_confirmed_at'] as Date | null) ?? null,
    leaseExpiresAt: until,
    leaseWasExpired: false,
    previousOutcomeUnknown: false,
    pinnedAccount: null,
    movedUnsettled: false,
    message: null,
    metadata: (row['handed_metadata'] as Record<string, unknown> | null) ?? null,
    suppression: suppressionFromLeaseRow(row, row['handed_su_key'] !== null),
    batchId: null,
    batchPosition: null,
    sendAlone: false,
    tenant: row['handed_tenant'] as string,
    holdTraceparent: (row['traceparent'] as string | null) ?? null,
    // No tenant of a handed batch has a policy: no sender of its own.
    sender: { from: null, replyTo: null },
  };
}
