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
  /** Who set the limit in force (perSecond, burst): the configuration at a start, or an operator at run time. */
  source: LimitSource;
  /** The operator (audit actor), or the configuration's variable; null: not known. */
  setBy: string | null;
  /** When the limit in force was set; null: not known. */
  setAt: Date | null;
  /** The configuration last applied (a start applies its own when it differs); null: none known yet. */
  configured: RateLimitPolicy | null;
}

/** Where the limit in force came from (migration 0028's limit_source). */
export const LimitSource = {
  /** LEASEHOLD_RATE_PER_SECOND and LEASEHOLD_RATE_BURST, or an accounts file's `rate:`, applied at a start. */
  configuration: 'configuration',
  /** `leasehold rate-limit`, PUT /v1/rate-limit, PUT /v1/accounts/:name/rate-limit, the dashboard, setRateLimit. */
  operator: 'operator',
} as const;
export type LimitSource = (typeof LimitSource)[keyof typeof LimitSource];

/**
 * Create the limiter row with the configured initial policy, recorded as
 * the configuration applied (`from`: its variable); an existing row wins.
 * A delivery process's start applies a changed configuration instead
 * (rateLimiterApplyConfigured).
 */
export async function rateLimiterEnsure(
  db: Queryable,
  schema: string,
  initial: RateLimitPolicy,
  account = DEFAULT_ACCOUNT,
  from: string | null = null,
): Promise<boolean> {
  const policy = validatePolicy(initial);
  const { rowCount } = await db.query(
    `INSERT INTO ${ident(schema)}.rate_limiter (name, per_second, burst, tokens, config_per_second, config_burst, limit_source, limit_set_by, limit_set_at)
     VALUES ($1, $2::float8, $3::int, $3::int, $2::float8, $3::int, 'configuration', $4, now()) ON CONFLICT (name) DO NOTHING`,
    [account, policy.perSecond, policy.burst, from],
  );
  return (rowCount ?? 0) > 0;
}

const STATE_COLUMNS = (now: string): string =>
  `l.name AS account, ${rate('l')} AS per_second, l.burst, l.updated_at, l.cooldown_until,
   CASE WHEN l.cooldown_until > ${now} THEN l.cooldown_since END AS cooldown_since,
   CASE WHEN l.cooldown_until > ${now} THEN (extract(epoch FROM ${now} - coalesce(l.cooldown_since, ${now})) * 1000)::float8 ELSE 0 END
     AS cooling_for_ms,
   ${refilled('l', now)}::float8 AS tokens, ${pausedNow('l', now)} AS account_paused,
   l.reason AS account_reason, l.paused_by AS account_paused_by, l.paused_at AS account_paused_at,
   l.paused_until AS account_paused_until, ${quotaUsed('l', now)} AS quota_used_today,
   l.limit_source, l.limit_set_by, l.limit_set_at, l.config_per_second, l.config_burst`;

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
    source: (row['limit_source'] as LimitSource | null | undefined) ?? LimitSource.configuration,
    setBy: (row['limit_set_by'] as string | null | undefined) ?? null,
    setAt: (row['limit_set_at'] as Date | null | undefined) ?? null,
    configured:
      row['config_per_second'] === null || row['config_per_second'] === undefined
        ? null
        : { perSecond: row['config_per_second'] as number, burst: row['config_burst'] as number },
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
 * A new policy on row `l`, set at `now` by `source` (SQL expressions).
 * Tokens are refilled under the old rate up to now, then clamped to the new
 * burst, so a change never grants a burst beyond the new policy.
 */
const policySet = (perSecond: string, burst: string, now: string, source: string, by: string): string =>
  `tokens = least(${burst}::float8, ${refilled('l', now)}),
   refilled_at = ${now},
   per_second = ${perSecond},
   burst = ${burst},
   limit_source = ${source},
   limit_set_by = ${by},
   limit_set_at = ${now},
   updated_at = ${now}`;

/**
 * An operator's change of the policy at run time (`actor`: the audit
 * log's). It stays in force until the configuration changes: the
 * configuration last applied is left as it was.
 */
export async function rateLimiterSet(
  db: Queryable,
  schema: string,
  policy: RateLimitPolicy,
  now: Date | null = null,
  account = DEFAULT_ACCOUNT,
  actor: string | null = null,
): Promise<RateLimitState> {
  const valid = validatePolicy(policy);
  await db.query(
    `INSERT INTO ${ident(schema)}.rate_limiter AS l (name, per_second, burst, tokens, limit_source, limit_set_by, limit_set_at)
     VALUES ($1, $2::float8, $3::int, $3::int, 'operator', $5, coalesce($4::timestamptz, now()))
     ON CONFLICT (name) DO UPDATE SET
       ${policySet('$2::float8', '$3::int', 'coalesce($4::timestamptz, now())', `'operator'`, '$5::text')}`,
    [account, valid.perSecond, valid.burst, now, actor],
  );
  return (await rateLimiterGet(db, schema, now, account))!;
}

/** What applying the configuration at a start did to an account's row (rateLimiterApplyConfigured). */
export interface ConfiguredApplication {
  /**
   * - `created`: there was no row; it starts with the configuration;
   * - `applied`: the configuration changed since it was last applied: it is the limit in force now;
   * - `unchanged`: the configuration is the one last applied: the limit in force (an operator's, perhaps) stays;
   * - `recorded`: no configuration was known to have been applied (an operator created the row, or
   *   set it before migration 0028): this one is recorded as applied, and the operator's limit stays.
   */
  outcome: 'created' | 'applied' | 'unchanged' | 'recorded';
  /** The row before (undefined: created). */
  before?: RateLimitState;
  after: RateLimitState;
}

const samePolicy = (a: RateLimitPolicy | null, b: RateLimitPolicy): boolean => a !== null && a.perSecond === b.perSecond && a.burst === b.burst;

/**
 * A start's configured policy for `account`: it takes effect when it
 * differs from the configuration last applied to the row (overriding an
 * operator's change), and otherwise leaves the limit in force alone. Run
 * it inside a transaction: the row stays locked until the caller commits
 * (with its audit entry), so processes starting together apply it once.
 */
export async function rateLimiterApplyConfigured(
  client: Queryable,
  schema: string,
  configured: RateLimitPolicy,
  options: { account?: string; from?: string | null; now?: Date | null } = {},
): Promise<ConfiguredApplication> {
  const policy = validatePolicy(configured);
  const account = options.account ?? DEFAULT_ACCOUNT;
  const now = options.now ?? null;
  const from = options.from ?? null;
  const created = await rateLimiterEnsure(client, schema, policy, account, from);
  const s = ident(schema);
  // Locked before it is read: a process that waited here sees what the one before it applied.
  await client.query(`SELECT 1 FROM ${s}.rate_limiter WHERE name = $1 FOR UPDATE`, [account]);
  const before = (await rateLimiterGet(client, schema, now, account))!;
  if (created) return { outcome: 'created', after: before };
  if (samePolicy(before.configured, policy)) return { outcome: 'unchanged', before, after: before };
  const recordOnly = before.configured === null;
  if (recordOnly) {
    await client.query(`UPDATE ${s}.rate_limiter SET config_per_second = $2::float8, config_burst = $3::int WHERE name = $1`, [
      account,
      policy.perSecond,
      policy.burst,
    ]);
  } else {
    await client.query(
      `UPDATE ${s}.rate_limiter l SET config_per_second = $2::float8, config_burst = $3::int,
         ${policySet('$2::float8', '$3::int', 'coalesce($4::timestamptz, now())', `'configuration'`, '$5::text')}
        WHERE name = $1`,
      [account, policy.perSecond, policy.burst, now, from],
    );
  }
  const after = (await rateLimiterGet(client, schema, now, account))!;
  return { outcome: recordOnly ? 'recorded' : 'applied', before, after };
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
