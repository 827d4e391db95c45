import { ValidationError } from '../errors.js';

/**
 * The retention policy's rules, pure: what the environment, the CLI flags and
 * the API body may say, and the defaults. What the policy reaches (tables and
 * columns) is in retention/policy.ts.
 */

export interface RetentionPolicy {
  /** Delete finished stories this many days after they ended; null keeps them forever. */
  retentionDays: number | null;
  /** Erase personal data this many days after a story ended; null never erases by age. */
  erasePiiAfterDays: number | null;
  /** Most stories (or standalone rows) per transaction. */
  batchSize: number;
  /** Longest sleep of the prune worker when there is nothing to do (ms). */
  intervalMs: number;
  /** Delete audit log entries this many days old (LEASEHOLD_AUDIT_RETENTION_DAYS); null keeps them; absent: 365. */
  auditRetentionDays?: number | null;
}

export const MAX_RETENTION_DAYS = 3650;
export const MAX_PRUNE_BATCH = 10_000;

export const DEFAULT_RETENTION: RetentionPolicy = {
  retentionDays: 30,
  erasePiiAfterDays: 7,
  batchSize: 1000,
  intervalMs: 60_000,
};

/**
 * A number of days, or `off` (null). The same rule reads the environment,
 * the CLI flags and the API body, so they can never disagree.
 */
export function parseDays(value: unknown, field: string, min: number): number | null {
  if (value === null || value === 'off') return null;
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > MAX_RETENTION_DAYS) {
    throw new ValidationError(field, `must be a whole number of days from ${min} to ${MAX_RETENTION_DAYS}, or off`);
  }
  return n;
}

export const parseRetentionDays = (value: unknown, field = 'retentionDays') => parseDays(value, field, 1);
/** 0 is allowed: erase as soon as a story has ended. */
export const parseErasePiiAfterDays = (value: unknown, field = 'erasePiiAfterDays') => parseDays(value, field, 0);

/** Personal data must go no later than the rows holding it. */
export function checkEraseWithinRetention(policy: Pick<RetentionPolicy, 'retentionDays' | 'erasePiiAfterDays'>, field = 'erasePiiAfterDays'): void {
  const { retentionDays, erasePiiAfterDays } = policy;
  if (retentionDays !== null && erasePiiAfterDays !== null && erasePiiAfterDays > retentionDays) {
    throw new ValidationError(
      field,
      `must not be more than the retention (${retentionDays} days): rows are deleted before their personal data would be erased`,
    );
  }
}

/** One line describing the policy, for the CLI and logs. */
export function describePolicy(policy: RetentionPolicy): string {
  const keep = policy.retentionDays === null ? 'kept forever' : `deleted ${policy.retentionDays} day(s) after they end`;
  const erase =
    policy.erasePiiAfterDays === null
      ? 'personal data kept until then'
      : `personal data erased ${policy.erasePiiAfterDays} day(s) after they end`;
  return `finished holds, intents and attempts ${keep}; ${erase}`;
}
