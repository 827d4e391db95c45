/**
 * The defaults, one set: the environment's (config.ts) and every worker's
 * and library function's when an option is left out. Apart from config.ts
 * so that a worker or the library reads its defaults without loading the
 * environment's schema.
 */
export const DEFAULTS = {
  schema: 'leasehold',
  emailFrom: 'Support <support@example.com>',
  ratePerSecond: 10,
  rateBurst: 10,
  expiryIntervalMs: 1000,
  expiryBatch: 500,
  leaseMs: 30_000,
  deliveryBatch: 50,
  deliveryConcurrency: 100,
  /** The provider call's timeout when none is set: half the lease, at most 10 s. */
  sendTimeoutMs: (leaseMs: number) => Math.min(10_000, Math.floor(leaseMs / 2)),
  maxAttempts: 10,
  /** Longest sleep of a delivery worker with nothing to send (a NOTIFY wakes it sooner). */
  deliveryPollMs: 1000,
  /**
   * Most pooled connections of a service process (`LEASEHOLD_POOL_SIZE`
   * unset): one running a lane, and the API alone. The delivery lane's
   * LISTEN session is one more, outside the pool.
   */
  poolSizeLanes: 12,
  poolSizeApi: 10,
  /** Opening a database connection, or waiting for a free pooled one, gives up after this long. */
  dbConnectTimeoutMs: 5000,
  /** How long a one-shot command waits for its database to come back (LEASEHOLD_DB_WAIT_S unset); services wait forever. */
  dbWaitCommandS: 10,
  /** A query with no answer fails after this long (its connection is dropped); see db/pool.ts connectionBounds. */
  dbQueryTimeoutMs: 20_000,
  /** The server ends a transaction of leasehold's whose client has been silent inside it this long (db/pool.ts withTransaction). */
  dbIdleInTransactionMs: 30_000,
  /**
   * A lane's round still unfinished after this long is given up on by its
   * loop (runtime/loop.ts); each of its waits is bounded already, so this
   * only ever fires on a bug.
   */
  tickTimeoutMs: 120_000,
  /** A delivery worker looks for leases whose owner is gone this often... */
  reclaimIntervalMs: 150,
  /** How often a delivery worker ends intents whose deadline passed unsent (delivery/deadlines.ts). */
  deadlineSweepIntervalMs: 1000,
  /** ...and takes them once the owner has been gone this long (a session that blinked keeps its leases). */
  reclaimGraceMs: 300,
  /** An account cooling down (429) this long sends its intents on to the next account in failover. */
  failoverAfterS: 60,
  /** Refused tokens from one client address in a minute before it is answered 429... */
  authFailuresPerMinute: 20,
  /** ...for this long. */
  authLockoutS: 300,
} as const;

/**
 * A sender at a documentation domain (example.com, .org, .net; RFC 2606),
 * like DEFAULTS.emailFrom: providers refuse it or it lands in spam, so the
 * delivery worker warns until a real one is set.
 */
export function isExampleSender(from: string): boolean {
  return /@example\.(com|org|net)>?\s*$/i.test(from);
}
