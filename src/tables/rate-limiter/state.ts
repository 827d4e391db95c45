import type { Queryable } from '../../db/pool.js';
import { ident } from '../../db/pool.js';
import { DEFAULT_ACCOUNT } from '../../model/accounts.js';
import { PAUSED_BY_OPERATOR, validatePauseReason, validatePolicy, type RateLimitPolicy } from '../../model/delivery-policy.js';
import { pausedNow, pauseStatement, resumeSet } from '../pause.js';
import { quotaUsed, rate, refilled } from './bucket-sql.js';

/**
 * An account's limiter row as operators and the status read it, its
 * policy changes and its own pause: what the API, the CLI and the read
 * models run. The delivery lane's statements are in permits.ts.
 */

export interface AccountPause {
  paused: boolean;
  reason: string | null;
  /** `operator`, or the provider whose answer paused the account. */
  pausedBy: string | null;
  pausedAt: Date | null;
  pausedUntil: Date | null;
}

export interface RateLimitState extends RateLimitPolicy {
  /** Permits available now (refilled to the database clock). */
  tokens: number;
  cooldownUntil: Date | null;
  /** When the cooldown in force began (null: none in force). */
  cooldownSince: Date | null;
  /** How long the cooldown in force has lasted (ms; 0: none). */
  coolingForMs: number;
  /** Emails granted today (UTC), counted against a daily quota. */
  quotaUsedToday: number;
  /** The account's own pause (the fleet-wide one is delivery_control's). */
  pause: AccountPause;
  updatedAt: Date;
}

/** Create the limiter row with the configured initial policy; an existing row (runtime changes) wins. */
export async function rateLimiterEnsure(db: Queryable, schema: string, initial: RateLimitPolicy, account = DEFAULT_ACCOUNT): Promise<void> {
  const policy = validatePolicy(initial);
  await db.query(
    `INSERT INTO ${ident(schema)}.rate_limiter (name, per_second, burst, tokens)
     VALUES ($1, $2::float8, $3::int, $3::int) ON CONFLICT (name) DO NOTHING`,
    [account, policy.perSecond, policy.burst],
  );
}

const STATE_COLUMNS = (now: string): string =>
  `l.name AS account, ${rate('l')} AS per_second, l.burst, l.updated_at, l.cooldown_until,
   CASE WHEN l.cooldown_until > ${now} THEN l.cooldown_since END AS cooldown_since,
   CASE WHEN l.cooldown_until > ${now} THEN (extract(epoch FROM ${now} - coalesce(l.cooldown_since, ${now})) * 1000)::float8 ELSE 0 END
     AS cooling_for_ms,
   ${refilled('l', now)}::float8 AS tokens, ${pausedNow('l', now)} AS account_paused,
   l.reason AS account_reason, l.paused_by AS account_paused_by, l.paused_at AS account_paused_at,
   l.paused_until AS account_paused_until, ${quotaUsed('l', now)} AS quota_used_today`;

/**
 * An account's limiter row refilled to `now` (SQL expression), named by
 * `name` (an SQL parameter holding the account's name): no row until a
 * worker or the API created it. rateLimiterGet reads it alone, the status
 * snapshot (read/stats.ts) beside the others.
 */
export const rateLimiterStateSql = (s: string, name: string, now: string): string =>
  `SELECT ${STATE_COLUMNS(now)} FROM ${s}.rate_limiter l WHERE l.name = ${name}`;

/** The pause columns, as a state row names them (`account_`: beside delivery_control's in the lane snapshot) or a pause statement returns them (``). */
const pauseFromRow = (row: Record<string, unknown>, prefix: 'account_' | ''): AccountPause => ({
  paused: (row[`${prefix}paused`] as boolean | null) ?? false,
  reason: (row[`${prefix}reason`] as string | null) ?? null,
  pausedBy: (row[`${prefix}paused_by`] as string | null) ?? null,
  pausedAt: (row[`${prefix}paused_at`] as Date | null) ?? null,
  pausedUntil: (row[`${prefix}paused_until`] as Date | null) ?? null,
});

/**
 * The accounts among `names` (an SQL text[] expression) at `now`, as one row
 * (`accounts_state`: a JSON array of {account, perSecond, burst, tokens,
 * paused, coolingDown}), for the lane snapshot (read/stats.ts): health is
 * degraded while any is paused, and /metrics has a gauge per account.
 */
export const rateLimiterAccountsSql = (s: string, names: string, now: string): string =>
  `SELECT coalesce(json_agg(json_build_object(
            'account', l.name, 'perSecond', ${rate('l')}, 'burst', l.burst, 'tokens', ${refilled('l', now)},
            'paused', ${pausedNow('l', now)}, 'coolingDown', coalesce(l.cooldown_until > ${now}, false)) ORDER BY l.name), '[]')
            AS accounts_state
     FROM ${s}.rate_limiter l WHERE l.name = ANY (${names})`;

/** One account of rateLimiterAccountsSql's row. */
export interface AccountGaugeState {
  account: string;
  perSecond: number;
  burst: number;
  tokens: number;
  paused: boolean;
  coolingDown: boolean;
}

/** Read back a row of rateLimiterStateSql; undefined where it had none (columns null through an outer join). */
export function rateLimiterStateFromRow(row: Record<string, unknown> | undefined): RateLimitState | undefined {
  if (!row || row['per_second'] === null || row['per_second'] === undefined) return undefined;
  return {
    perSecond: row['per_second'] as number,
    burst: row['burst'] as number,
    tokens: row['tokens'] as number,
    cooldownUntil: row['cooldown_until'] as Date | null,
    cooldownSince: (row['cooldown_since'] as Date | null | undefined) ?? null,
    coolingForMs: Math.max(0, (row['cooling_for_ms'] as number | null | undefined) ?? 0),
    quotaUsedToday: (row['quota_used_today'] as number | null | undefined) ?? 0,
    pause: pauseFromRow(row, 'account_'),
    updatedAt: row['updated_at'] as Date,
  };
}

export async function rateLimiterGet(
  db: Queryable,
  schema: string,
  now: Date | null = null,
  account = DEFAULT_ACCOUNT,
): Promise<RateLimitState | undefined> {
  const { rows } = await db.query(rateLimiterStateSql(ident(schema), '$1', 'coalesce($2::timestamptz, now())'), [account, now]);
  return rateLimiterStateFromRow(rows[0]);
}

/** The rows of the named accounts that exist, by name (one statement: routing reads them every round). */
export async function rateLimiterGetMany(
  db: Queryable,
  schema: string,
  accounts: readonly string[],
  now: Date | null = null,
): Promise<Map<string, RateLimitState>> {
  const { rows } = await db.query(
    `SELECT ${STATE_COLUMNS('coalesce($2::timestamptz, now())')} FROM ${ident(schema)}.rate_limiter l WHERE l.name = ANY ($1::text[])`,
    [accounts, now],
  );
  return new Map(rows.map((row) => [row['account'] as string, rateLimiterStateFromRow(row)!]));
}

/**
 * Change the policy at run time. Tokens are refilled under the old rate up
 * to now, then clamped to the new burst, so a change never grants a burst
 * beyond the new policy.
 */
export async function rateLimiterSet(
  db: Queryable,
  schema: string,
  policy: RateLimitPolicy,
  now: Date | null = null,
  account = DEFAULT_ACCOUNT,
): Promise<RateLimitState> {
  const valid = validatePolicy(policy);
  await db.query(
    `INSERT INTO ${ident(schema)}.rate_limiter AS l (name, per_second, burst, tokens)
     VALUES ($1, $2::float8, $3::int, $3::int)
     ON CONFLICT (name) DO UPDATE SET
       tokens = least($3::int::float8, ${refilled('l', 'coalesce($4::timestamptz, now())')}),
       refilled_at = coalesce($4::timestamptz, now()),
       per_second = $2::float8,
       burst = $3::int,
       updated_at = coalesce($4::timestamptz, now())`,
    [account, valid.perSecond, valid.burst, now],
  );
  return (await rateLimiterGet(db, schema, now, account))!;
}

/**
 * Pause one account (every worker stops sending through it on its next
 * take; its intents that may move go to the next account in failover).
 * `by` is `operator` or the provider whose answer paused it; precedence as
 * for the fleet's pause (tables/pause.ts). Undefined: no such account row.
 */
export async function rateLimiterPause(
  db: Queryable,
  schema: string,
  account: string,
  pause: { reason: string; by: string; untilMs?: number; now?: Date | null },
): Promise<AccountPause | undefined> {
  const reason = validatePauseReason(pause.reason);
  const { rows } = await db.query(pauseStatement(`${ident(schema)}.rate_limiter`, 'name', 'c.name = $6'), [
    reason,
    pause.by,
    pause.untilMs ?? null,
    PAUSED_BY_OPERATOR,
    pause.now ?? null,
    account,
  ]);
  return rows[0] ? pauseFromRow(rows[0], '') : undefined;
}

/** Lift the pause of one account, or of every account (`account` null). Returns the accounts resumed. */
export async function rateLimiterResume(db: Queryable, schema: string, account: string | null, now: Date | null = null): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `UPDATE ${ident(schema)}.rate_limiter SET ${resumeSet('coalesce($2::timestamptz, now())')}
      WHERE ($1::text IS NULL OR name = $1) AND paused
     RETURNING name`,
    [account, now],
  );
  return rows.map((r) => r.name);
}
