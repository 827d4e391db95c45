import type pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../observability/logger.js';
import { startEmbeddedPostgres } from './embedded.js';
import { migrate } from './migrate.js';
import { createPool } from './pool.js';

export interface Database {
  pool: pg.Pool;
  schema: string;
  /** Connection string in use (embedded or DATABASE_URL); never logged whole. */
  url: string;
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * Connect to DATABASE_URL, or start (or adopt) the embedded PostgreSQL under
 * LEASEHOLD_DATA_DIR when it is unset. `close()` ends the pool and stops the
 * embedded server if this process started it.
 */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'schema'>,
  logger: Logger,
  options: { poolSize?: number; migrate?: boolean; applicationName?: string } = {},
): Promise<Database> {
  let url = config.databaseUrl;
  let stopEmbedded = async () => {};
  if (!url) {
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
  });
  try {
    if (options.migrate) {
      const { applied } = await migrate(pool, config.schema);
      if (applied.length > 0) logger.info({ event: 'migrations.applied', applied, schema: config.schema }, 'migrations applied');
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
