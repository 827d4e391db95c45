/**
 * Figures the capacity model takes from this codebase rather than from the
 * operator: measured row and log sizes, measured throughput, and how many
 * statements each lane issues per batch or round (read off the workers).
 */

/**
 * Measured 2026-11-30 on PostgreSQL 17.10 (the embedded server, default
 * settings) against the schema of migrations 0001-0004 (the hold row again
 * after 0011 added the holds listing index), by the procedure in
 * test/helpers/capacity-measure.ts: 3,000 holds created with createHold (generated
 * UUID id, a 26-character address, metadata `{"ticket":"T-100000"}`),
 * expired by ExpiryWorker and sent by DeliveryWorker through the sandbox,
 * then VACUUM FULL with no other transaction open in the database; bytes = growth of heap + TOAST + all indexes (main
 * forks) / rows. test/capacity/row-bytes.test.ts re-measures (with 2,000
 * holds) on every `npm test` and fails if a migration moves any figure by a
 * quarter; `LEASEHOLD_CAPACITY_PRINT=1 npx vitest run
 * test/capacity/row-bytes.test.ts` prints the new figures.
 *
 * Without compaction (plain VACUUM right after one insert-update cycle, so
 * every dead row version's space still counted) the same rows took 795,
 * 1,430 and 672 bytes: the upper bound of update churn. Long-running tables
 * reuse that space, so the model multiplies the compact size by a bloat
 * factor (input `storage.bloatFactor`, default 1.3) between the two.
 */
export const MEASURED = {
  bytesPerRow: {
    /** support_reservations row in a terminal state: heap + pkey + the (created_at, id) listing index (the due index holds only live holds). */
    hold: 422,
    /** email_outbox row once finished: heap + pkey, reservation_id unique, the state listing index; half-full pages (fillfactor 50, migration 0031: 672 at 80); 1,073 with a second listing index, before 0034. */
    intent: 975,
    /** email_attempts row: heap + pkey + finished_at and receipt indexes (422 also with 0014's accepted-window index, dropped by 0034: at 2,000 rows its pages did not move the figure). */
    attempt: 422,
  },
  /**
   * Structured log bytes per expired hold: what the lanes' pino logger wrote
   * (its share of the expiry batch's one holds.expired line and of the
   * round's one delivery.recorded line; each hold's hold.expired and
   * intent.created are debug since 2026-12-03, 660 bytes before, and
   * intent.leased and intent.accepted since the round's rebuild, 1274
   * before that) plus the API's hold.created line. Measured again by
   * test/capacity/row-bytes.test.ts.
   */
  logBytesPerExpiredHold: 210,
  /** One API log line (hold.created, hold.confirmed): a hold that never expires logs two. */
  logBytesPerApiLine: 208,
} as const;

/**
 * Throughput from BENCHMARKS.md (run finished 2026-11-30 04:37 UTC, 2 vCPUs):
 * ExpiryWorker at the default batch of 500, median of five rounds.
 */
export const EXPIRY_HOLDS_PER_SECOND = 38_735;

/**
 * Database time of one expiry tick that finds few holds, from BENCHMARKS.md's
 * breakdown of a transaction (COMMIT with its WAL flush 1.3-1.7 ms, now the
 * statement's own, without BEGIN's 0.2 ms since the batch is one statement)
 * plus the one-row statement with its look-ahead, about 1 ms together.
 * Bounds how many separate ticks a second one worker runs.
 */
export const EXPIRY_TICK_MS = 3;

/**
 * Database and scheduling time of one delivery round besides the provider
 * call: BENCHMARKS.md measured about 2,000 intents/s for one process at 8
 * intents per round with an instant provider, so about 4 ms per round.
 */
export const DELIVERY_ROUND_OVERHEAD_MS = 4;

/**
 * Statements per unit of work, read off src/holds/expiry-worker.ts and
 * src/delivery/worker.ts (with src/db/pool.ts withTransaction):
 */
export const STATEMENTS = {
  /**
   * Expiry tick with a full batch: holdsExpireDue, committed on its own (it
   * loops at once). With an expiry hook that succeeds it is five: BEGIN, the
   * statement, the hook's setup, the hook, COMMIT; the model counts the
   * lanes without one.
   */
  expiryFullTick: 1,
  /**
   * Expiry tick with a short batch: the same statement, which also reads
   * how long to sleep (holdsExpireDueWithOutlook; a separate holdsDueOutlook
   * before 2026-12-03).
   */
  expiryShortTick: 1,
  /**
   * Delivery round that sends a first attempt: intentsLeaseOneTenantTaking
   * (the lease takes its own permits from the limiter and gives back what it
   * did not use, in one statement), messagesStore, intentsRecord.
   */
  deliverySendingRound: 3,
  /** A retry's round: the message is stored already, so no messagesStore. */
  deliveryRetryRound: 2,
  /** Delivery round that finds nothing: the taking lease (0 rows, its permits back in the bucket). */
  deliveryEmptyRound: 1,
  /** The limiter refused (bucket empty): the taking lease leased nothing and the round ends there. */
  deliveryRefusedTake: 1,
  /**
   * A round that cannot take in its lease adds rateLimiterTake before it:
   * an account sending batches (a permit carries several emails), several
   * accounts or routes, and pending intents of several tenants (the fair
   * lease). The model adds it for batching accounts; it does not know the
   * tenants.
   */
  deliverySeparateTake: 1,
  /** The application's createHold, and confirmHold/cancelHold for holds that do not expire. */
  holdCreate: 1,
  holdSettle: 1,
} as const;

/** Idle delivery processes poll once per second (DeliveryWorker's pollIntervalMs). */
export const DELIVERY_POLL_PER_SECOND = 1;

export const SECONDS_PER_DAY = 86_400;
/** The month cloud price pages bill by: 730 hours. */
export const HOURS_PER_MONTH = 730;
export const DAYS_PER_MONTH = HOURS_PER_MONTH / 24;
