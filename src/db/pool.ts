import pg from 'pg';
import { DEFAULTS } from '../defaults.js';
import { isConnectionError } from '../errors.js';
import { checkFunction, checkKnownOptions, checkPool } from './arguments.js';
import { DatabaseHosts } from './hosts.js';
import { withQueryTimeout } from './query-timeout.js';

/**
 * Anything that runs a query: a Pool, a PoolClient or a Client. Library
 * functions take this so an application can call them inside its own
 * transaction with its own client.
 */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/**
 * Independent reads, side by side on a pool (each on a connection of its
 * own, so their round trips overlap), one after another on a single client,
 * which runs one query at a time anyway (and on which pg deprecates queueing
 * a query while another runs). Answers in the order asked.
 */
export async function readAll<T extends readonly unknown[]>(db: Queryable, reads: { [K in keyof T]: () => Promise<T[K]> }): Promise<T> {
  if (db instanceof pg.Pool) return (await Promise.all(reads.map((read) => read()))) as unknown as T;
  const answers: unknown[] = [];
  for (const read of reads) answers.push(await read());
  return answers as unknown as T;
}

export interface PoolOptions {
  connectionString: string;
  max?: number;
  applicationName?: string;
  /** Give up on opening a connection (or waiting for a free one) after this long; default DEFAULTS.dbConnectTimeoutMs. */
  connectTimeoutMs?: number;
  /** Fail a query with no answer after this long, and drop its connection; default DEFAULTS.dbQueryTimeoutMs, 0 for none. */
  queryTimeoutMs?: number;
}

/**
 * The bounds on every wait for the database, for pools and for the
 * sessions outside them (the LISTEN session): no await on the database can
 * hang, so a round fails and backs off instead (a half-open connection
 * after a failover or a partition answers nothing, ever).
 *
 * - Opening a connection gives up after `connectTimeoutMs`.
 * - A query gives up after `queryTimeoutMs`, on the client's clock, so it
 *   also fires when the server is unreachable. The connection is then
 *   dropped (withClient releases it as broken; pool.query does the same),
 *   which ends the server's side of it: a statement still running there is
 *   abandoned and an open transaction rolls back. Client-side rather than
 *   the server's statement_timeout because that one is a startup parameter
 *   a transaction-mode PgBouncer refuses; set it on the role as well if
 *   you want the server to stop such statements sooner.
 * - TCP keep-alive on, so a silent peer is noticed even between queries.
 *
 * A pool's clients apply the query timeout themselves (db/query-timeout.ts,
 * pg's behaviour without pg's `query_timeout` option, which kept every
 * query's rows alive into the old generation); the LISTEN session, a
 * handful of queries a minute, keeps pg's option.
 */
export function connectionBounds(options: { connectTimeoutMs?: number; queryTimeoutMs?: number }): {
  connectionTimeoutMillis: number;
  query_timeout?: number;
  keepAlive: true;
  keepAliveInitialDelayMillis: number;
} {
  const queryTimeoutMs = options.queryTimeoutMs ?? DEFAULTS.dbQueryTimeoutMs;
  return {
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULTS.dbConnectTimeoutMs,
    ...(queryTimeoutMs > 0 ? { query_timeout: queryTimeoutMs } : {}),
    keepAlive: true,
    keepAliveInitialDelayMillis: 5000,
  };
}

/**
 * A statement that may legitimately run long (a migration's CREATE INDEX,
 * waiting for another migrator): without the client-side timeout. (pg and
 * the pool's clients read `query_timeout` per query; @types/pg does not
 * declare it.)
 */
export function unboundedQuery(text: string, values: unknown[] = []): pg.QueryConfig {
  return { text, values, query_timeout: 2 ** 31 - 1 } as pg.QueryConfig;
}

/**
 * Type parsing for leasehold's own pools only: int8 (count(*), bigint
 * columns) as numbers, since counts here stay far below 2^53. Passed per
 * pool rather than through `pg.types.setTypeParser`, which would change how
 * every other pg client in the host application reads int8. Queries that
 * may run on an application's client (the Queryable functions) cast their
 * counts to int in SQL, so they read the same there.
 */
const leaseholdTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 && format !== 'binary'
      ? (value: string) => Number.parseInt(value, 10)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * A pool on `connectionString`, which may list several hosts
 * (`postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`):
 * its connections then go to the host that gives a session of the kind
 * asked (db/hosts.ts).
 */
export function createPool(options: PoolOptions): pg.Pool {
  checkKnownOptions('options', options, (r) => ({
    connectionString: r.z.string('must be a postgres:// URL').min(1, 'must be a postgres:// URL'),
    max: r.positiveInt.optional(),
    applicationName: r.z.string('must be a string').optional(),
    connectTimeoutMs: r.nonNegative.optional(),
    queryTimeoutMs: r.nonNegative.optional(),
  }), { required: true });
  const hosts = new DatabaseHosts(options.connectionString);
  // The query timeout is the pool's clients' own (db/query-timeout.ts), not pg's option.
  const { query_timeout: queryTimeoutMs = 0, ...bounds } = connectionBounds(options);
  const pool = new pg.Pool({
    types: leaseholdTypes,
    connectionString: hosts.firstUrl,
    Client: withQueryTimeout(hosts.simple ? pg.Client : hosts.poolClient(), queryTimeoutMs),
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'leasehold',
    ...bounds,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection (database restart) must not crash
  // the process: the pool drops it and the next checkout reconnects.
  pool.on('error', () => {});
  if (!hosts.simple) pool.on('release', (error: Error | undefined, client: pg.PoolClient) => hosts.released(client, error));
  return pool;
}

/**
 * Check a client out of the pool for the duration of `work`, then return it.
 *
 * While a client is checked out, pg-pool takes its own idle 'error' listener
 * off it; a connection that breaks then (database restart, backend
 * terminated, network reset) emits an 'error' event nobody listens to, and
 * Node ends the process. So every checkout in leasehold goes through here:
 * we listen for the whole checkout, and a client whose connection broke is
 * released as broken (`release(err)`), so the pool destroys it instead of
 * handing a dead connection to the next caller.
 */
export async function withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  checkPool(pool);
  checkFunction('work', work);
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken ??= error;
  };
  // The callback form, not `await pool.connect()`: a new client is handed
  // over synchronously from inside its socket's data handler, and the same
  // chunk can carry a FATAL (57P01, the server shutting down) right after
  // ReadyForQuery. Attached in the callback, the listener is in place before
  // that error is emitted; after an await it would come too late.
  const client = await new Promise<pg.PoolClient>((resolve, reject) => {
    pool.connect((error, connected) => {
      if (error || !connected) return reject(error ?? new Error('pool.connect returned no client'));
      connected.on('error', onError);
      resolve(connected);
    });
  });
  try {
    return await work(client);
  } catch (error) {
    if (isConnectionError(error)) broken ??= error as Error;
    throw error;
  } finally {
    // release() puts pg-pool's own listener back (or destroys the client)
    // synchronously, so no error can fall between the two calls.
    client.release(broken);
    client.off('error', onError);
  }
}

/**
 * How withTransaction begins: the server ends the transaction (and its row
 * locks) if this client goes silent inside it, so a partitioned worker's
 * expiry batch does not keep its holds locked until the server's TCP
 * keep-alive gives up, hours later. SET LOCAL, so it is this transaction's
 * alone, also behind a transaction-mode pooler; one round trip with the BEGIN.
 */
const BEGIN = `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${DEFAULTS.dbIdleInTransactionMs}`;

/**
 * Inside withTransaction's `work`: roll back everything done so far and go
 * on in a fresh transaction, begun as withTransaction begins one (one round
 * trip). For work whose first try usually succeeds, cheaper than a
 * savepoint taken and released on every try.
 */
export async function restartTransaction(client: pg.PoolClient): Promise<void> {
  await client.query(`ROLLBACK; ${BEGIN}`);
}

/**
 * Run `work` in a transaction on one client from the pool. Commits on
 * success, rolls back on error; a client whose connection broke is
 * destroyed rather than returned to the pool (see withClient).
 */
export function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  // withClient refuses a work that is not a function (ValidationError naming work), as a rejection.
  if (typeof work !== 'function') return withClient(pool, work);
  return withClient(pool, async (client) => {
    await client.query(BEGIN);
    try {
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // A failed ROLLBACK means the connection is gone (the server rolls
      // back on its own then); the client has emitted 'error' and
      // withClient releases it as broken.
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  });
}

/** Quote a schema or table identifier (identifiers only, never values). */
export function ident(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}

