import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { decodeKeyCursor, encodeKeyCursor } from '../model/cursor.js';
import { TENANT_PATTERN } from '../model/hold-input.js';
import type { TenantPolicy, TenantPolicyFields } from '../model/tenant-policy.js';

/**
 * Every statement on `tenant_policies` (migration 0021): a tenant's cap,
 * weight, account and sender, one row per tenant that has a policy. The
 * bucket columns (`tokens`, `refilled_at`) belong to the delivery lane's
 * take; the statements here set them only when a cap is set or changed.
 *
 * Retention reaches no row here: a policy is configuration an operator
 * wrote, not history, and its addresses are the tenant business's senders,
 * not its customers' (see the migration).
 */

interface TenantPolicyRow {
  tenant: string;
  per_second: number | null;
  burst: number | null;
  weight: number;
  account: string | null;
  from_address: string | null;
  reply_to: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'tenant, per_second, burst, weight, account, from_address, reply_to, created_at, updated_at';

function fromRow(row: TenantPolicyRow): TenantPolicy {
  return {
    tenant: row.tenant,
    perSecond: row.per_second,
    burst: row.burst,
    weight: row.weight,
    account: row.account,
    from: row.from_address,
    replyTo: row.reply_to,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function tenantPoliciesGet(db: Queryable, schema: string, tenant: string): Promise<TenantPolicy | undefined> {
  const { rows } = await db.query<TenantPolicyRow>(`SELECT ${COLUMNS} FROM ${ident(schema)}.tenant_policies WHERE tenant = $1`, [tenant]);
  return rows[0] && fromRow(rows[0]);
}

export interface TenantPolicyPage {
  policies: TenantPolicy[];
  /** Opaque cursor for the next page, or null at the end. */
  nextCursor: string | null;
}

/** By tenant (the empty tenant first), keyset-paged on the primary key. */
export async function tenantPoliciesList(db: Queryable, schema: string, options: { limit: number; cursor?: string }): Promise<TenantPolicyPage> {
  const after = options.cursor ? decodeKeyCursor(options.cursor, (key) => TENANT_PATTERN.test(key)) : null;
  const { rows } = await db.query<TenantPolicyRow>(
    `SELECT ${COLUMNS} FROM ${ident(schema)}.tenant_policies
      WHERE ($1::text IS NULL OR tenant > $1)
      ORDER BY tenant
      LIMIT $2`,
    [after, options.limit + 1],
  );
  const page = rows.slice(0, options.limit);
  const last = page.at(-1);
  return { policies: page.map(fromRow), nextCursor: rows.length > options.limit && last ? encodeKeyCursor(last.tenant) : null };
}

/**
 * Set a tenant's policy as a whole (fields validated by
 * validateTenantPolicy); `created` says whether the tenant had none. `now`:
 * null for the database clock.
 *
 * The bucket starts full (tokens = burst, refilled at `now`) when a cap is
 * set on a tenant that had none, and is cleared when the cap is removed.
 * When a cap changes, the bucket goes on under the new one: its tokens at
 * most the new burst, its refill time kept, so from the change on the
 * tenant sends within the new `burst + perSecond * t`, as it would from a
 * fresh bucket, and a change never hands out a burst on top of what the old
 * cap had left (no refill formula here: the lane's take refills it). An
 * unchanged cap leaves it as it was.
 */
export async function tenantPolicyPut(
  db: Queryable,
  schema: string,
  tenant: string,
  policy: TenantPolicyFields,
  now: Date | null = null,
): Promise<{ policy: TenantPolicy; created: boolean }> {
  const { rows } = await db.query<TenantPolicyRow & { created: boolean }>(
    `INSERT INTO ${ident(schema)}.tenant_policies AS t
            (tenant, per_second, burst, weight, account, from_address, reply_to, tokens, refilled_at, created_at, updated_at)
     VALUES ($1, $2::float8, $3::int, $4, $5, $6, $7, $3::int::float8,
             CASE WHEN $2::float8 IS NOT NULL THEN coalesce($8::timestamptz, now()) END,
             coalesce($8::timestamptz, now()), coalesce($8::timestamptz, now()))
     ON CONFLICT (tenant) DO UPDATE SET
       per_second = EXCLUDED.per_second,
       burst = EXCLUDED.burst,
       weight = EXCLUDED.weight,
       account = EXCLUDED.account,
       from_address = EXCLUDED.from_address,
       reply_to = EXCLUDED.reply_to,
       tokens = CASE WHEN EXCLUDED.per_second IS NULL THEN NULL
                     ELSE least(EXCLUDED.burst::float8, coalesce(t.tokens, EXCLUDED.burst::float8)) END,
       refilled_at = CASE WHEN EXCLUDED.per_second IS NULL THEN NULL
                          ELSE coalesce(t.refilled_at, EXCLUDED.refilled_at) END,
       updated_at = EXCLUDED.updated_at
     RETURNING ${COLUMNS}, (xmax = 0) AS created`,
    [tenant, policy.perSecond, policy.burst, policy.weight, policy.account, policy.from, policy.replyTo, now],
  );
  const row = rows[0]!;
  return { policy: fromRow(row), created: row.created };
}

/** Remove a tenant's policy; the removed row, or undefined when it had none. */
export async function tenantPolicyDelete(db: Queryable, schema: string, tenant: string): Promise<TenantPolicy | undefined> {
  const { rows } = await db.query<TenantPolicyRow>(`DELETE FROM ${ident(schema)}.tenant_policies WHERE tenant = $1 RETURNING ${COLUMNS}`, [tenant]);
  return rows[0] && fromRow(rows[0]);
}

/**
 * SQL expression for the fair lease (tables/outbox/fair.ts): the weight of
 * tenant `tenant` (an SQL text expression), 1 for a tenant without a policy.
 */
export const tenantWeightSql = (s: string, tenant: string): string =>
  `coalesce((SELECT p.weight FROM ${s}.tenant_policies p WHERE p.tenant = ${tenant}), 1)`;

/**
 * CTE fragments for the fair lease's tenant caps (tables/outbox/fair.ts).
 * `tenant_caps`: the capped tenants among `tenants` (a CTE with a tenant
 * column), locked (a lease of that tenant in another process waits here,
 * so their takes add up), with the permits refilled at `now`: the account
 * limiter's token bucket, per tenant.
 */
export const tenantCapsSql = (s: string, tenants: string, now: string): string =>
  `tenant_caps AS (
       SELECT p.tenant, floor(least(p.burst::float8,
                p.tokens + p.per_second * greatest(0, extract(epoch FROM ${now} - p.refilled_at))))::int AS permits,
              least(p.burst::float8, p.tokens + p.per_second * greatest(0, extract(epoch FROM ${now} - p.refilled_at))) AS avail,
              greatest(p.refilled_at, ${now}) AS at
         FROM ${s}.tenant_policies p
        WHERE p.tenant IN (SELECT tenant FROM ${tenants}) AND p.per_second IS NOT NULL
          FOR UPDATE OF p
     )`;

/** Statement fragment: spend `taken` (a CTE of tenant, n) of each capped tenant's permits from `tenant_caps`. */
export const tenantCapsSpendSql = (s: string, taken: string): string =>
  `UPDATE ${s}.tenant_policies p SET tokens = greatest(0, c.avail - coalesce(t.n, 0)), refilled_at = c.at
     FROM tenant_caps c LEFT JOIN ${taken} t ON t.tenant = c.tenant
    WHERE p.tenant = c.tenant`;

/** SQL condition: tenant `tenant` has no cap (the fair lease's fill takes only from those). */
export const tenantUncappedSql = (s: string, tenant: string): string =>
  // As tenantNotPausedSql: computed once, so the fill keeps its index order.
  `${tenant} <> ALL (ARRAY(SELECT p.tenant FROM ${s}.tenant_policies p WHERE p.per_second IS NOT NULL))`;

/**
 * For the outbox's lease statement (tables/outbox/lease.ts): each leased
 * intent's tenant sender, joined on the policy's key only where
 * `unrendered` holds (no stored message: the round renders it now), so the
 * round needs no statement of its own for it.
 */
export const tenantSenderJoinForLease = (s: string, tenant: string, unrendered: string): string =>
  `LEFT JOIN ${s}.tenant_policies tp ON ${unrendered} AND tp.tenant = ${tenant}`;
export const TENANT_SENDER_LEASE_COLUMNS = 'tp.from_address AS tp_from_address, tp.reply_to AS tp_reply_to';

/**
 * SQL expression: whether tenant `tenant`, routed to one of `known` (a
 * text[] expression), is routed to `account`; NULL when it is routed to
 * none of them.
 */
export const tenantRoutedHereSql = (s: string, tenant: string, known: string, account: string): string =>
  `(SELECT p.account = ${account} FROM ${s}.tenant_policies p WHERE p.tenant = ${tenant} AND p.account = ANY (${known}))`;

/** SQL condition: tenant `tenant` has a policy row (a weight, cap, pause, route or sender of its own). */
export const tenantHasPolicySql = (s: string, tenant: string): string =>
  `EXISTS (SELECT 1 FROM ${s}.tenant_policies p WHERE p.tenant = ${tenant})`;

/** SQL condition: tenant `tenant` is not paused (the lease takes nothing of a paused tenant). */
export const tenantNotPausedSql = (s: string, tenant: string): string =>
  // An uncorrelated array (computed once a statement), not NOT EXISTS: an
  // anti-join there would take the lease off its index order (PostgreSQL 15
  // sorted a million rows for it).
  `${tenant} <> ALL (ARRAY(SELECT p.tenant FROM ${s}.tenant_policies p WHERE p.paused))`;

export interface TenantPause {
  tenant: string;
  paused: boolean;
  reason: string | null;
  pausedAt: Date | null;
}

/** Pause one tenant (a row with only the pause when it had no policy); the first pause's reason and time stay while it lasts. */
export async function tenantPause(db: Queryable, schema: string, tenant: string, reason: string): Promise<TenantPause> {
  const { rows } = await db.query<{ tenant: string; paused: boolean; paused_reason: string | null; paused_at: Date | null }>(
    `INSERT INTO ${ident(schema)}.tenant_policies (tenant, paused, paused_reason, paused_at) VALUES ($1, true, $2, now())
     ON CONFLICT (tenant) DO UPDATE SET
       paused_reason = CASE WHEN tenant_policies.paused THEN tenant_policies.paused_reason ELSE excluded.paused_reason END,
       paused_at = CASE WHEN tenant_policies.paused THEN tenant_policies.paused_at ELSE excluded.paused_at END,
       paused = true
     RETURNING tenant, paused, paused_reason, paused_at`,
    [tenant, reason],
  );
  const r = rows[0]!;
  return { tenant: r.tenant, paused: r.paused, reason: r.paused_reason, pausedAt: r.paused_at };
}

/** Resume one tenant; undefined when it was not paused. */
export async function tenantResume(db: Queryable, schema: string, tenant: string): Promise<TenantPause | undefined> {
  const { rows } = await db.query<{ tenant: string }>(
    `UPDATE ${ident(schema)}.tenant_policies SET paused = false, paused_reason = NULL, paused_at = NULL
      WHERE tenant = $1 AND paused RETURNING tenant`,
    [tenant],
  );
  return rows[0] ? { tenant: rows[0].tenant, paused: false, reason: null, pausedAt: null } : undefined;
}

/** A tenant with email waiting, as operators see it. */
export interface TenantBacklog {
  tenant: string;
  /** Pending intents. */
  backlog: number;
  /** Age of its oldest pending intent (s). */
  oldestAgeSeconds: number;
  /** Its emails accepted in the last minute. */
  sentLastMinute: number;
  paused: boolean;
  pauseReason: string | null;
}

/**
 * The `limit` tenants with the largest backlogs, largest first: one pass
 * over the pending intents (email_outbox_tenant_due), then each one's
 * last-minute sends from the recent attempts. For `status` and the
 * listing, not for every metrics scrape at a million pending.
 */
export async function tenantsBacklog(db: Queryable, schema: string, limit: number): Promise<TenantBacklog[]> {
  const s = ident(schema);
  const { rows } = await db.query<{
    tenant: string;
    backlog: number;
    oldest_age_s: number;
    sent: number;
    paused: boolean | null;
    paused_reason: string | null;
  }>(
    `WITH top AS (
       SELECT o.tenant, count(*)::int AS backlog, extract(epoch FROM now() - min(o.created_at))::float8 AS oldest_age_s
         FROM ${s}.email_outbox o WHERE o.state = 'pending'
        GROUP BY o.tenant ORDER BY count(*) DESC, o.tenant LIMIT $1
     )
     SELECT top.*, p.paused, p.paused_reason,
            -- The recent attempts only (email_attempts_finished), whatever the history.
            (SELECT count(*)::int FROM ${s}.email_attempts a JOIN ${s}.email_outbox o ON o.id = a.intent_id
              WHERE a.finished_at > now() - interval '1 minute' AND a.outcome = 'accepted' AND o.tenant = top.tenant) AS sent
       FROM top LEFT JOIN ${s}.tenant_policies p ON p.tenant = top.tenant
      ORDER BY top.backlog DESC, top.tenant`,
    [limit],
  );
  return rows.map((r) => ({
    tenant: r.tenant,
    backlog: r.backlog,
    oldestAgeSeconds: Math.max(0, r.oldest_age_s),
    sentLastMinute: r.sent,
    paused: r.paused ?? false,
    pauseReason: r.paused_reason,
  }));
}
