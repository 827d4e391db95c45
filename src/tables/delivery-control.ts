import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { ValidationError } from '../errors.js';

/**
 * Fleet-wide delivery controls stored in the database: pause/resume and the
 * shared rate limiter's policy. Every delivery worker reads them on each
 * permit request (at least once a second), so a change takes effect fleet-
 * wide within a second with no deploy.
 */

export const LIMITER_NAME = 'email';

export interface DeliveryControl {
  paused: boolean;
  reason: string | null;
  pausedBy: string | null;
  pausedAt: Date | null;
  pausedUntil: Date | null;
}

export interface RateLimitPolicy {
  perSecond: number;
  burst: number;
}

export interface RateLimitState extends RateLimitPolicy {
  /** Permits available now (refilled to the database clock). */
  tokens: number;
  cooldownUntil: Date | null;
  updatedAt: Date;
}

/**
 * The slowest policy: one send per 1,000 s. Anything slower is a pause (use
 * pause), and rates near float8's smallest values make `per_second * elapsed`
 * underflow in PostgreSQL, which errors instead of rounding to 0.
 */
export const MIN_PER_SECOND = 0.001;
export const MAX_PER_SECOND = 1_000_000;
export const MAX_BURST = 1_000_000;

export const PER_SECOND_RULE = `must be a number from ${MIN_PER_SECOND} to ${MAX_PER_SECOND}`;

export function isValidPerSecond(perSecond: unknown): perSecond is number {
  return typeof perSecond === 'number' && Number.isFinite(perSecond) && perSecond >= MIN_PER_SECOND && perSecond <= MAX_PER_SECOND;
}

/** The policy rules, one place: the API, the CLI, the configuration and the library all call these. */
export function validatePerSecond(perSecond: unknown): number {
  if (!isValidPerSecond(perSecond)) throw new ValidationError('perSecond', PER_SECOND_RULE);
  return perSecond;
}

export function validateBurst(burst: unknown): number {
  if (typeof burst !== 'number' || !Number.isInteger(burst) || burst < 1 || burst > MAX_BURST) {
    throw new ValidationError('burst', `must be a whole number from 1 to ${MAX_BURST}`);
  }
  return burst;
}

export function validatePolicy(policy: { perSecond?: unknown; burst?: unknown }): RateLimitPolicy {
  return { perSecond: validatePerSecond(policy.perSecond), burst: validateBurst(policy.burst) };
}

/** Create the limiter row with the configured initial policy; an existing row (runtime changes) wins. */
export async function rateLimiterEnsure(db: Queryable, schema: string, initial: RateLimitPolicy): Promise<void> {
  const policy = validatePolicy(initial);
  await db.query(
    `INSERT INTO ${ident(schema)}.rate_limiter (name, per_second, burst, tokens)
     VALUES ($1, $2::float8, $3::int, $3::int) ON CONFLICT (name) DO NOTHING`,
    [LIMITER_NAME, policy.perSecond, policy.burst],
  );
}

/**
 * The refill expressions below (and limiterTake's) hold a stored rate under
 * MIN_PER_SECOND to MIN_PER_SECOND: such a row (written by hand or by an
 * older version) must not make every read and take fail with an underflow.
 * Reads report that effective rate.
 */
export async function rateLimiterGet(db: Queryable, schema: string): Promise<RateLimitState | undefined> {
  const { rows } = await db.query<{
    per_second: number;
    burst: number;
    tokens: number;
    cooldown_until: Date | null;
    updated_at: Date;
  }>(
    `SELECT r.per_second, l.burst, l.updated_at, l.cooldown_until,
            least(l.burst::float8, l.tokens + r.per_second * greatest(0, extract(epoch FROM now() - l.refilled_at)))::float8 AS tokens
       FROM ${ident(schema)}.rate_limiter l,
            LATERAL (SELECT greatest(l.per_second, $2::float8) AS per_second) r
      WHERE l.name = $1`,
    [LIMITER_NAME, MIN_PER_SECOND],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    perSecond: row.per_second,
    burst: row.burst,
    tokens: row.tokens,
    cooldownUntil: row.cooldown_until,
    updatedAt: row.updated_at,
  };
}

/**
 * Change the policy at run time. Tokens are refilled under the old rate up
 * to now, then clamped to the new burst, so a change never grants a burst
 * beyond the new policy.
 */
export async function rateLimiterSet(db: Queryable, schema: string, policy: RateLimitPolicy): Promise<RateLimitState> {
  const valid = validatePolicy(policy);
  await db.query(
    `INSERT INTO ${ident(schema)}.rate_limiter AS l (name, per_second, burst, tokens)
     VALUES ($1, $2::float8, $3::int, $3::int)
     ON CONFLICT (name) DO UPDATE SET
       tokens = least($3::int::float8, least(l.burst::float8,
                  l.tokens + greatest(l.per_second, $4::float8) * greatest(0, extract(epoch FROM now() - l.refilled_at)))),
       refilled_at = now(),
       per_second = $2::float8,
       burst = $3::int,
       updated_at = now()`,
    [LIMITER_NAME, valid.perSecond, valid.burst, MIN_PER_SECOND],
  );
  return (await rateLimiterGet(db, schema))!;
}

interface ControlRow {
  paused: boolean;
  reason: string | null;
  paused_by: string | null;
  paused_at: Date | null;
  paused_until: Date | null;
}

const controlFromRow = (row: ControlRow): DeliveryControl => ({
  paused: row.paused,
  reason: row.reason,
  pausedBy: row.paused_by,
  pausedAt: row.paused_at,
  pausedUntil: row.paused_until,
});

/** Current pause state; a pause whose `paused_until` has passed reads as resumed. */
export async function deliveryControlGet(db: Queryable, schema: string): Promise<DeliveryControl> {
  const { rows } = await db.query<ControlRow>(
    `SELECT (paused AND (paused_until IS NULL OR paused_until > now())) AS paused,
            reason, paused_by, paused_at, paused_until
       FROM ${ident(schema)}.delivery_control`,
  );
  return controlFromRow(rows[0]!);
}

/** `by` for pauses an operator asked for (API, CLI, dashboard); anything else is a provider's name. */
export const PAUSED_BY_OPERATOR = 'operator';

/**
 * Pause delivery fleet-wide. `by` says who (`operator`, or a provider name
 * when a provider answer paused it); `untilMs` makes the pause lift itself.
 *
 * Precedence, because a send still in flight when an operator pauses can
 * come back with a provider's pause:
 * - an operator's pause replaces whatever pause is in force (the operator's
 *   latest word wins, with its own reason and end);
 * - a provider's pause never changes an operator's pause in force: not its
 *   reason, not its end (a provider condition still there when the
 *   operator's pause ends is met again on the next send);
 * - a provider's pause on top of a provider's pause may only lengthen it:
 *   the later end wins (no end is latest), with its reason.
 * `paused_at` stays when delivery first stopped. One statement, evaluated
 * against the row under its lock, so concurrent pauses cannot interleave.
 */
export async function deliveryPause(
  db: Queryable,
  schema: string,
  pause: { reason: string; by: string; untilMs?: number },
): Promise<DeliveryControl> {
  const reason = pause.reason.trim();
  if (reason.length === 0 || reason.length > 500) throw new ValidationError('reason', 'must be 1-500 characters');
  const s = ident(schema);
  const { rows } = await db.query<ControlRow>(
    `WITH cur AS (
       SELECT id, reason, paused_by, paused_at, paused_until,
              paused AND (paused_until IS NULL OR paused_until > now()) AS active
         FROM ${s}.delivery_control
          FOR UPDATE
     ), req AS (
       SELECT CASE WHEN $3::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $3::float8 / 1000) END AS until
     ), decision AS (
       SELECT cur.*, req.until AS new_until,
              NOT cur.active
                OR $2::text = $4::text
                OR (cur.paused_by IS DISTINCT FROM $4::text AND cur.paused_until IS NOT NULL
                    AND (req.until IS NULL OR req.until > cur.paused_until)) AS wins
         FROM cur, req
     )
     UPDATE ${s}.delivery_control c SET
       paused = true,
       reason = CASE WHEN d.wins THEN $1 ELSE d.reason END,
       paused_by = CASE WHEN d.wins THEN $2 ELSE d.paused_by END,
       paused_at = CASE WHEN d.active THEN d.paused_at ELSE now() END,
       paused_until = CASE WHEN d.wins THEN d.new_until ELSE d.paused_until END,
       updated_at = CASE WHEN d.wins THEN now() ELSE c.updated_at END
       FROM decision d
      WHERE c.id = d.id
     RETURNING c.paused, c.reason, c.paused_by, c.paused_at, c.paused_until`,
    [reason, pause.by, pause.untilMs ?? null, PAUSED_BY_OPERATOR],
  );
  return controlFromRow(rows[0]!);
}

/** Lift any pause, an operator's or a provider's: resuming is always an operator's decision. */
export async function deliveryResume(db: Queryable, schema: string): Promise<DeliveryControl> {
  const { rows } = await db.query<ControlRow>(
    `UPDATE ${ident(schema)}.delivery_control SET
       paused = false, reason = NULL, paused_by = NULL, paused_at = NULL, paused_until = NULL, updated_at = now()
     RETURNING paused, reason, paused_by, paused_at, paused_until`,
  );
  return controlFromRow(rows[0]!);
}
