import { NotFoundError, ValidationError } from '../errors.js';
import { DEFAULT_PAUSE_REASON, PAUSED_BY_OPERATOR, validatePauseReason } from '../model/delivery-policy.js';
import { AuditAction } from '../model/audit-actions.js';
import { validateTenant } from '../model/hold-input.js';
import { validateTenantPolicy, type TenantPolicy } from '../model/tenant-policy.js';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../runtime/clock.js';
import type { Queryable } from '../db/pool.js';
import type { AuditRecord } from '../tables/audit-log.js';
import {
  tenantPause,
  tenantPoliciesGet,
  tenantPoliciesList,
  tenantPolicyDelete,
  tenantPolicyPut,
  tenantResume,
  tenantsBacklog,
  type TenantBacklog,
  type TenantPause,
  type TenantPolicyPage,
} from '../tables/tenants.js';

/**
 * One audited change: `work` runs on the change's connection, and `audit`
 * writes its audit entry in the same transaction (Operations.audited).
 */
export type AuditedChange = <T>(work: (db: Queryable, audit: (record: AuditRecord) => Promise<void>) => Promise<T>) => Promise<T>;

export interface TenantOperationsOptions {
  pool: Queryable;
  schema: string;
  clock: Clock;
  logger: Logger;
  /** The configured account names, which a policy may route to. */
  accountNames: readonly string[];
  change: AuditedChange;
}

/**
 * What an operator does to one tenant of the application: its policy
 * (cap, weight, accounts, sender) and its pause. `Operations.tenants`; the
 * CLI's `leasehold tenants` and the API's /v1/tenants go through it.
 */
export class TenantOperations {
  constructor(private readonly options: TenantOperationsOptions) {}

  /** A tenant's policy, or undefined when it has none. A tenant that breaks the tenant rule is a ValidationError naming `tenant`. */
  async policy(tenant: string): Promise<TenantPolicy | undefined> {
    return tenantPoliciesGet(this.options.pool, this.options.schema, validateTenant(tenant));
  }

  /** Every tenant policy, by tenant, keyset-paged. */
  async policies(page: { limit: number; cursor?: string }): Promise<TenantPolicyPage> {
    return tenantPoliciesList(this.options.pool, this.options.schema, page);
  }

  /**
   * Set a tenant's policy as a whole (model/tenant-policy.ts). `accounts`:
   * the account names a policy may route to, by default the configured
   * ones; null where they are not known (a library caller that passed
   * none), and then any well-formed name is stored.
   */
  async setPolicy(
    tenant: string,
    input: unknown,
    accounts: readonly string[] | null = this.options.accountNames,
  ): Promise<{ policy: TenantPolicy; created: boolean }> {
    const { schema, clock } = this.options;
    const name = validateTenant(tenant);
    const fields = validateTenantPolicy(input, accounts ?? undefined);
    const result = await this.options.change(async (db, audit) => {
      const before = await tenantPoliciesGet(db, schema, name);
      const result = await tenantPolicyPut(db, schema, name, fields, clock.now());
      await audit({ action: AuditAction.tenantPolicySet, target: name, before: before ?? null, after: result.policy });
      return result;
    });
    // The addresses stay out of the log, as every address does.
    const { from, replyTo, ...logged } = fields;
    this.options.logger.info(
      { event: 'tenant.policy_set', tenant: name, created: result.created, ...logged, from: from !== null, replyTo: replyTo !== null, by: PAUSED_BY_OPERATOR },
      'tenant policy set',
    );
    return result;
  }

  /** Remove a tenant's policy (it then shares its account with no cap); NotFoundError when it had none. */
  async deletePolicy(tenant: string): Promise<TenantPolicy> {
    const name = validateTenant(tenant);
    const removed = await this.options.change(async (db, audit) => {
      const removed = await tenantPolicyDelete(db, this.options.schema, name);
      if (!removed) throw new NotFoundError('tenant policy', name);
      await audit({ action: AuditAction.tenantPolicyDelete, target: name, before: removed, after: null });
      return removed;
    });
    this.options.logger.info({ event: 'tenant.policy_deleted', tenant: name, by: PAUSED_BY_OPERATOR }, 'tenant policy deleted');
    return removed;
  }

  /**
   * Pause one tenant: no round leases its intents (they stay pending) until
   * it is resumed; every other tenant goes on. `reason` as for the fleet's pause.
   */
  async pause(tenant: string, reason: string = DEFAULT_PAUSE_REASON): Promise<TenantPause> {
    const name = validateTenant(tenant);
    const why = validatePauseReason(reason);
    const pause = await this.options.change(async (db, audit) => {
      const pause = await tenantPause(db, this.options.schema, name, why);
      await audit({ action: AuditAction.tenantPause, target: name, after: pause });
      return pause;
    });
    this.options.logger.warn({ event: 'tenant.paused', tenant: name, reason: pause.reason, by: PAUSED_BY_OPERATOR }, 'tenant paused');
    return pause;
  }

  /** Resume one tenant; NotFoundError when it was not paused. */
  async resume(tenant: string): Promise<TenantPause> {
    const name = validateTenant(tenant);
    const resumed = await this.options.change(async (db, audit) => {
      const resumed = await tenantResume(db, this.options.schema, name);
      if (!resumed) throw new NotFoundError('tenant pause', name);
      await audit({ action: AuditAction.tenantResume, target: name, after: resumed });
      return resumed;
    });
    this.options.logger.info({ event: 'tenant.resumed', tenant: name, by: PAUSED_BY_OPERATOR }, 'tenant resumed');
    return resumed;
  }

  /** The `limit` tenants with the largest backlogs (1-1000). */
  async backlog(limit = 20): Promise<TenantBacklog[]> {
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new ValidationError('limit', 'must be a whole number from 1 to 1000');
    return tenantsBacklog(this.options.pool, this.options.schema, limit);
  }
}
