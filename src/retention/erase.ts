import type pg from 'pg';
import { withTransaction } from '../db/pool.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { RETENTION_TABLES, validateErasureAddress, validateTables, type RetentionTables } from './policy.js';
import { addressErase, type AddressErasure } from './address-erasure.js';
import { tenantEraseBatch, tenantHeldHolds } from './tenant-erasure.js';
import { validateTenant } from '../model/hold-input.js';
import { DEFAULT_RETENTION, MAX_PRUNE_BATCH } from '../model/retention-policy.js';
import { ValidationError } from '../errors.js';
import { checkKnownOptions, checkPool } from '../db/arguments.js';
import type { TableCounts } from './sql.js';
import { AuditAction, libraryActor, type AuditActor } from '../model/audit-actions.js';
import { auditInsert } from '../tables/audit-log.js';

/** The options both erasures check (the rest are the service's: logger, metrics, tables, actor). */
const ERASE_FIELDS: Parameters<typeof checkKnownOptions>[2] = (r) => ({
    schema: r.schema.optional(),
    now: r.z.date('must be a Date').nullable().optional(),
    lockTimeoutMs: r.positive.optional(),
  });

export interface EraseOptions {
  schema?: string;
  now?: Date | null;
  logger?: Logger;
  metrics?: Metrics;
  tables?: RetentionTables;
  /** Longest wait for a row another transaction holds (default 5 s); then it fails and can be run again. */
  lockTimeoutMs?: number;
  /**
   * Who asked: the audit entry (counts only, never the address) is written
   * in the erasure's transaction. A string is a library caller's name
   * (`library:<name>`); unset: `library`.
   */
  actor?: AuditActor | string;
}

const actorOf = (actor: AuditActor | string | undefined): AuditActor => (typeof actor === 'object' ? actor : libraryActor(actor));

/**
 * A person's deletion request: erase `address` everywhere leasehold stores
 * it, in one transaction, and report what changed per table. Idempotent:
 * a second run finds nothing left and reports zeros. Logs one
 * `retention.erasure` event with the counts, never the address.
 */
export async function eraseAddress(pool: pg.Pool, email: unknown, options: EraseOptions = {}): Promise<AddressErasure> {
  checkPool(pool);
  checkKnownOptions('options', options, ERASE_FIELDS);
  const address = validateErasureAddress(email);
  const tables = options.tables ?? RETENTION_TABLES;
  validateTables(tables);
  const result = await withTransaction(pool, async (client) => {
    await client.query(`SELECT set_config('lock_timeout', $1, true)`, [`${options.lockTimeoutMs ?? 5000}ms`]);
    const erased = await addressErase(client, options.schema ?? 'leasehold', address, { now: options.now ?? null, tables });
    await auditInsert(client, options.schema ?? 'leasehold', actorOf(options.actor), {
      action: AuditAction.erasureAddress,
      target: 'address',
      detail: { counts: erased.counts, rejectedPending: erased.rejectedPending, inFlight: erased.inFlight, heldHolds: erased.heldHoldIds.length },
    }, options.now ?? null);
    return erased;
  });
  for (const [table, count] of Object.entries(result.counts)) if (count > 0) options.metrics?.retentionErased.inc({ table }, count);
  (options.logger ?? silentLogger).info(
    {
      event: 'retention.erasure',
      counts: result.counts,
      rejectedPending: result.rejectedPending,
      inFlight: result.inFlight,
      heldHolds: result.heldHoldIds.length,
    },
    'address erased on request',
  );
  return result;
}

export interface TenantErasure {
  /** Rows changed (or, for tables erased by deletion, deleted) per table, summed over the batches. */
  counts: TableCounts;
  /** Stories erased (holds whose personal data went). */
  stories: number;
  /** Transactions it took. */
  batches: number;
  /** Pending intents of the tenant, rejected so nothing more is sent. */
  rejectedPending: number;
  /** Of those, how many were leased: a send may have been in flight and may still arrive. */
  inFlight: number;
  /** The tenant's held holds, left untouched (live reservations), and the first 100 of their ids. */
  heldHolds: number;
  heldHoldIds: string[];
}

export interface TenantEraseOptions extends EraseOptions {
  /** Stories per transaction (default LEASEHOLD_PRUNE_BATCH's default, 1,000). */
  batchSize?: number;
}

/**
 * A customer (tenant) leaving: erase the personal data of every story of
 * `tenant`, whatever its age, in batches of `batchSize` stories, one short
 * transaction each, so a large tenant holds no long transaction. Each story
 * is erased as the prune pass erases one; a pending intent is rejected as
 * by `eraseAddress`; held holds are reported, not changed. The tenant's
 * policy row (tenant_policies) is configuration and stays. Idempotent: a
 * second run reports zeros. A failure (lock_timeout) leaves the batches
 * already committed erased; run it again to finish. Logs one
 * `retention.tenant_erasure` event with the counts.
 */
export async function eraseTenant(pool: pg.Pool, tenant: unknown, options: TenantEraseOptions = {}): Promise<TenantErasure> {
  checkPool(pool);
  checkKnownOptions('options', options, ERASE_FIELDS);
  const name = validateTenant(tenant);
  const limit = options.batchSize ?? DEFAULT_RETENTION.batchSize;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PRUNE_BATCH) {
    throw new ValidationError('batchSize', `must be a whole number from 1 to ${MAX_PRUNE_BATCH}`);
  }
  const tables = options.tables ?? RETENTION_TABLES;
  validateTables(tables);
  const schema = options.schema ?? 'leasehold';
  const report: TenantErasure = { counts: {}, stories: 0, batches: 0, rejectedPending: 0, inFlight: 0, heldHolds: 0, heldHoldIds: [] };
  let cursor: Date | null = null;
  for (;;) {
    const batch = await withTransaction(pool, async (client) => {
      await client.query(`SELECT set_config('lock_timeout', $1, true)`, [`${options.lockTimeoutMs ?? 5000}ms`]);
      const erased = await tenantEraseBatch(client, schema, name, { now: options.now ?? null, limit, cursor, tables });
      // One entry per batch, in its transaction: each batch commits on its own.
      await auditInsert(client, schema, actorOf(options.actor), {
        action: AuditAction.erasureTenant,
        target: name,
        detail: { batch: report.batches + 1, stories: erased.stories, counts: erased.counts, rejectedPending: erased.rejectedPending, inFlight: erased.inFlight },
      }, options.now ?? null);
      return erased;
    });
    report.batches += 1;
    report.stories += batch.stories;
    report.rejectedPending += batch.rejectedPending;
    report.inFlight += batch.inFlight;
    for (const [table, count] of Object.entries(batch.counts)) {
      report.counts[table] = (report.counts[table] ?? 0) + count;
      if (count > 0) options.metrics?.retentionErased.inc({ table }, count);
    }
    // LIMIT sits above the row locks, so a short batch means none are left.
    if (batch.stories < limit) break;
    cursor = batch.cursor;
  }
  const held = await tenantHeldHolds(pool, schema, name);
  report.heldHolds = held.count;
  report.heldHoldIds = held.ids;
  (options.logger ?? silentLogger).info(
    {
      event: 'retention.tenant_erasure',
      tenant: name,
      counts: report.counts,
      stories: report.stories,
      batches: report.batches,
      rejectedPending: report.rejectedPending,
      inFlight: report.inFlight,
      heldHolds: report.heldHolds,
    },
    "tenant's personal data erased on request",
  );
  return report;
}
