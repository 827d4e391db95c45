import type pg from 'pg';
import { withTransaction } from '../db/pool.js';
import { AuditAction, CONFIGURATION_ACTOR } from '../model/audit-actions.js';
import type { RateLimitPolicy } from '../model/delivery-policy.js';
import type { Logger } from '../observability/logger.js';
import { auditInsert } from '../tables/audit-log.js';
import { rateLimiterApplyConfigured, type ConfiguredApplication, type RateLimitState } from '../tables/rate-limiter.js';

/**
 * A delivery process's configured rate limits, applied at its start
 * (on an existing database the configured limit was once silently not
 * the one in force). The rule:
 * - a configuration that changed since it was last applied to an account's
 *   row takes effect, overriding an operator's change, and is audited as
 *   `rate_limit.set` by `configuration`;
 * - while the configuration stays the same, an operator's change at run
 *   time stays in force, and the process says so at start (a warning with
 *   both values).
 * Each account is one transaction holding its row's lock, so processes
 * starting together apply a change once and audit it once.
 */

export interface ConfiguredRate {
  account: string;
  policy: RateLimitPolicy;
  /** Where it is configured: `LEASEHOLD_RATE_PER_SECOND/LEASEHOLD_RATE_BURST` or `LEASEHOLD_ACCOUNTS_FILE`. */
  from: string;
}

const policyOf = (state: RateLimitState): RateLimitPolicy => ({ perSecond: state.perSecond, burst: state.burst });
const inForce = (state: RateLimitState) => ({ ...policyOf(state), source: state.source, setBy: state.setBy, setAt: state.setAt });

export async function applyConfiguredRates(
  pool: pg.Pool,
  schema: string,
  rates: readonly ConfiguredRate[],
  logger: Logger,
): Promise<Map<string, ConfiguredApplication>> {
  const results = new Map<string, ConfiguredApplication>();
  for (const { account, policy, from } of rates) {
    const result = await withTransaction(pool, async (client) => {
      const result = await rateLimiterApplyConfigured(client, schema, policy, { account, from });
      if (result.outcome === 'applied') {
        await auditInsert(client, schema, CONFIGURATION_ACTOR, {
          action: AuditAction.rateLimitSet,
          target: account,
          before: policyOf(result.before!),
          after: policyOf(result.after),
          detail: { source: 'configuration', from, replaced: result.before!.source },
        });
      }
      return result;
    });
    results.set(account, result);
    const { after } = result;
    if (result.outcome === 'applied') {
      logger.info(
        { event: 'rate_limit.configured', account, from, before: inForce(result.before!), after: policyOf(after) },
        'the configured rate limit changed since it was last applied: it is in force now',
      );
    } else if (after.perSecond !== policy.perSecond || after.burst !== policy.burst) {
      // Only an operator's change can stand between the configuration and the limit in force.
      logger.warn(
        { event: 'rate_limit.configuration_overridden', account, configured: policy, from, inForce: inForce(after) },
        `the configured rate limit of account ${account} (${policy.perSecond}/s, burst ${policy.burst}) is not in force: ` +
          `an operator's change is (${after.perSecond}/s, burst ${after.burst}, by ${after.setBy ?? 'an operator'}${after.setAt ? ` at ${after.setAt.toISOString()}` : ''}); ` +
          'it stays until the configuration changes or an operator sets another',
      );
    }
  }
  return results;
}
