import { checkArgument, checkPool, rules } from '../db/arguments.js';
import { ValidationError } from '../errors.js';

/** The constructor's arguments (rules in db/arguments.ts): a gateway that can send, a sender that is an address, positive numbers. */
export function checkWorkerOptions(options: { pool?: unknown; gateway?: unknown; accounts?: unknown }): void {
  checkArgument('options', rules().z.object({}, 'must be an object like { pool, gateway }'), options);
  checkPool(options.pool, 'options.pool');
  const r = rules();
  const account = r.z.object({ name: r.z.string('must be a string').min(1, 'must not be empty'), gateway: r.gateway, from: r.sender.optional() });
  checkArgument(
    'options',
    r.z.object({
      schema: r.schema.optional(),
      gateway: r.gateway.optional(),
      accounts: r.z.array(account, 'must be an array of accounts').optional(),
      from: r.sender.optional(),
      batchSize: r.positiveInt.optional(),
      concurrency: r.positiveInt.optional(),
      leaseMs: r.positive.optional(),
      sendTimeoutMs: r.positive.optional(),
      maxAttempts: r.positiveInt.optional(),
      pollIntervalMs: r.positive.optional(),
      failoverAfterMs: r.nonNegative.optional(),
      reclaimIntervalMs: r.nonNegative.optional(),
      reclaimGraceMs: r.nonNegative.optional(),
      clock: r.clock.optional(),
      logger: r.logger.optional(),
    }),
    options,
  );
  if (options.gateway === undefined && options.accounts === undefined) throw new ValidationError('options.gateway', 'required (or give accounts)');
}
