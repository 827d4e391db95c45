import type pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../observability/logger.js';
import { SchemaNotMigratedError } from '../errors.js';
import { embeddedClusterExists, startEmbeddedPostgres } from './embedded.js';
import { migrate, requireMigrated } from './migrate.js';
import { createPool } from './pool.js';
import { describeHosts, parseDatabaseUrl } from '../model/database-url.js';
import { waitForDatabase } from './wait.js';

export interface Database {
  pool: pg.Pool;
  schema: string;
  /** Connection string in use (embedded or DATABASE_URL); never logged whole. */
  url: string;
  embedded: boolean;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  poolSize?: number;
  applicationName?: string;
  /**
   * What to do about the schema's migrations: `apply` them (services and
   * `migrate`), `require` them to be applied already and create nothing
   * (commands that read or operate on existing rows), or leave the schema
   * alone (the default).
   */
  migrations?: 'apply' | 'require';
  /**
   * How long to wait for DATABASE_URL's server if it cannot be reached at
   * start, in seconds (Infinity: forever); default 0, fail at once. The
   * embedded server is started here and never waited for.
   */
  waitS?: number;
}

/**
 * Connect to DATABASE_URL, or start (or adopt) the embedded PostgreSQL under
 * LEASEHOLD_DATA_DIR when it is unset. `close()` ends the pool and stops the
 * embedded server if this process started it.
 */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'schema'> & Partial<Pick<Config, 'dbConnectTimeoutMs' | 'dbQueryTimeoutMs'>>,
  logger: Logger,
  options: OpenDatabaseOptions = {},
): Promise<Database> {
  let url = config.databaseUrl;
  let stopEmbedded = async () => {};
  if (!url) {
    // Starting the embedded server would initdb a new cluster: nothing there
    // to read, and nothing a read-only command may create.
    if (options.migrations === 'require' && !(await embeddedClusterExists(config.dataDir))) {
      throw new SchemaNotMigratedError(
        `no embedded database under ${config.dataDir} (LEASEHOLD_DATA_DIR); run leasehold migrate, or set DATABASE_URL`,
      );
    }
    const embedded = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      onLog: (line) => logger.info({ event: 'embedded_postgres.log' }, line),
    });
    url = embedded.url;
    stopEmbedded = embedded.stop;
    logger.info(
      { event: 'embedded_postgres.ready', dataDir: config.dataDir, owned: embedded.owned },
      embedded.owned ? 'started embedded PostgreSQL' : 'using embedded PostgreSQL started by another leasehold process',
    );
  }
  const pool = createPool({
    connectionString: url,
    max: options.poolSize ?? 10,
    applicationName: options.applicationName ?? 'leasehold',
    ...(config.dbConnectTimeoutMs !== undefined ? { connectTimeoutMs: config.dbConnectTimeoutMs } : {}),
    ...(config.dbQueryTimeoutMs !== undefined ? { queryTimeoutMs: config.dbQueryTimeoutMs } : {}),
  });
  // The first work on the database, tried again as a whole while the
  // server is away: a migration cut off by a restart or failover rolled
  // back with its connection, and is applied again under its lock.
  const firstContact = async () => {
    if (options.migrations === 'apply') {
      const { applied } = await migrate(pool, config.schema);
      if (applied.length > 0) logger.info({ event: 'migrations.applied', applied, schema: config.schema }, 'migrations applied');
    } else if (options.migrations === 'require') {
      await requireMigrated(pool, config.schema);
    } else {
      await pool.query('SELECT 1');
    }
  };
  try {
    if (config.databaseUrl) {
      await waitForDatabase(firstContact, { waitS: options.waitS ?? 0, logger, hosts: describeHosts(parseDatabaseUrl(url)) });
    } else {
      await firstContact();
    }
  } catch (error) {
    await pool.end().catch(() => {});
    await stopEmbedded().catch(() => {});
    throw error;
  }
  let closed: Promise<void> | undefined;
  return {
    pool,
    schema: config.schema,
    url,
    embedded: !config.databaseUrl,
    close: () =>
      (closed ??= (async () => {
        await pool.end().catch(() => {});
        await stopEmbedded();
      })()),
  };
}
