import { randomInt } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '../observability/logger.js';

/**
 * A delivery worker's presence: a session advisory lock on its own id,
 * held on the worker's one session connection (the LISTEN session,
 * db/listener.ts). PostgreSQL drops the lock the moment that connection
 * ends: the process was killed (its kernel closes the socket), it lost the
 * database, or the server gave up on a silent client (the session's TCP
 * keep-alives, about 4 s). Each lease names its owner (email_attempts.
 * worker), so any worker can tell a lease whose owner is gone and reclaim
 * it at once instead of waiting out the lease (tables/outbox.ts
 * intentsReclaimGone).
 *
 * The lock is (namespace, id) in the two-key form, shown in pg_locks as
 * classid = namespace, objid = id, objsubid = 2. The namespace is derived
 * from the schema, so fleets on different schemas of one database never
 * see each other's workers.
 *
 * Behind a transaction-mode pooler there is no session to hold the lock:
 * the LISTEN check fails there first (db/listener.ts), no session is ever
 * handed over, and leases carry no owner. They are then reclaimed only when
 * they expire, as before.
 */

/** The lock namespace of a schema's workers: a positive int4 (an SQL expression over `schema`, a text parameter). */
export const presenceNamespaceSql = (schema: string): string => `(hashtext('leasehold.worker:' || ${schema}) & 2147483647)`;

/**
 * The ids of the workers of `schema` whose presence lock is held right now,
 * as a subquery with one int column `owner`. pg_locks shows the locks of
 * every database on the server, so it is narrowed to this one.
 */
export const presenceLiveOwnersSql = (schema: string): string =>
  `SELECT l.objid::int8::int4 AS owner
     FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
      AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
      AND l.classid = ${presenceNamespaceSql(schema)}::int8::oid`;

export class Presence {
  private id: number | undefined;

  constructor(
    private readonly schema: string,
    private readonly logger: Logger,
  ) {}

  /** This worker's id while its lock is held; undefined otherwise (its leases then name no owner). */
  get owner(): number | undefined {
    return this.id;
  }

  /**
   * The session holding the lock, while it does: a connection of the
   * worker's own, outside its pool, so the worker's reclaimer
   * (delivery/reclaimer.ts) never queues behind its rounds for a pooled
   * connection when a dead worker's leases are waiting.
   */
  get session(): pg.Client | undefined {
    return this.id === undefined ? undefined : this.client;
  }

  private client: pg.Client | undefined;

  /**
   * Take the lock on `session`, under the id this worker had before if it
   * is free (a reconnect keeps the id, so leases taken before a blip stay
   * this worker's), else under a new random one.
   */
  async acquire(session: pg.Client): Promise<void> {
    let id = this.previous ?? randomInt(1, 2 ** 31 - 1);
    for (let tries = 0; tries < 5; tries++) {
      const { rows } = await session.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${presenceNamespaceSql('$1')}, $2::int4) AS ok`, [
        this.schema,
        id,
      ]);
      if (rows[0]?.ok) {
        this.id = id;
        this.previous = id;
        this.client = session;
        this.logger.info({ event: 'presence.held', worker: id }, 'presence lock held: a crash of this worker frees its leases at once');
        return;
      }
      // Taken: another live worker drew the same id.
      id = randomInt(1, 2 ** 31 - 1);
    }
    throw new Error('no free worker id after 5 tries');
  }

  private previous: number | undefined;

  /** The session is gone, and with it the lock. */
  lost(): void {
    if (this.id === undefined) return;
    this.logger.warn({ event: 'presence.lost', worker: this.id }, 'presence lock lost with the session; new leases name no owner until it is back');
    this.id = undefined;
    this.client = undefined;
  }
}
