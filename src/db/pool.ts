import pg from 'pg';

/**
 * Anything that runs a query: a Pool, a PoolClient or a Client. Library
 * functions take this so an application can call them inside its own
 * transaction with its own client.
 */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

export interface PoolOptions {
  connectionString: string;
  max?: number;
  applicationName?: string;
}

// timestamptz/int8 parsing: keep int8 (count(*)) as numbers; counts here stay
// far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number.parseInt(v, 10));

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'leasehold',
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection (database restart) must not crash
  // the process: the pool drops it and the next checkout reconnects.
  pool.on('error', () => {});
  return pool;
}

/**
 * Run `work` in a transaction on one client from the pool. Commits on
 * success, rolls back on error; a client whose connection broke is
 * destroyed rather than returned to the pool.
 */
export async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    broken = error as Error;
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release(broken !== undefined && isConnectionError(broken) ? broken : undefined);
  }
}

/** Quote a schema or table identifier (identifiers only, never values). */
export function ident(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}

/** Errors that mean the connection or server went away, not a bad query. */
export function isConnectionError(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  if (typeof e?.code === 'string') {
    // 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now,
    // class 08 connection exceptions.
    if (e.code.startsWith('08') || e.code === '57P01' || e.code === '57P02' || e.code === '57P03') return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND'].includes(e.code)) return true;
  }
  const message = e?.message ?? '';
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable/i.test(message);
}
