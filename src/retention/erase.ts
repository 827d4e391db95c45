import type pg from 'pg';
import { withTransaction } from '../db/pool.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { RETENTION_TABLES, validateErasureAddress, validateTables, type RetentionTables } from './policy.js';
import { addressErase, type AddressErasure } from './address-erasure.js';

export interface EraseOptions {
  schema?: string;
  now?: Date | null;
  logger?: Logger;
  metrics?: Metrics;
  tables?: RetentionTables;
  /** Longest wait for a row another transaction holds (default 5 s); then it fails and can be run again. */
  lockTimeoutMs?: number;
}

/**
 * A person's deletion request: erase `address` everywhere leasehold stores
 * it, in one transaction, and report what changed per table. Idempotent:
 * a second run finds nothing left and reports zeros. Logs one
 * `retention.erasure` event with the counts, never the address.
 */
export async function eraseAddress(pool: pg.Pool, email: unknown, options: EraseOptions = {}): Promise<AddressErasure> {
  const address = validateErasureAddress(email);
  const tables = options.tables ?? RETENTION_TABLES;
  validateTables(tables);
  const result = await withTransaction(pool, async (client) => {
    await client.query(`SELECT set_config('lock_timeout', $1, true)`, [`${options.lockTimeoutMs ?? 5000}ms`]);
    return addressErase(client, options.schema ?? 'leasehold', address, { now: options.now ?? null, tables });
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
