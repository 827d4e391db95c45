import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, ident } from '../src/db/pool.js';

/**
 * The PostgreSQL every benchmark runs against: LEASEHOLD_BENCH_DATABASE_URL
 * when set, otherwise an embedded server in a temporary directory that is
 * removed afterwards. Each benchmark works in a fresh, migrated schema so
 * no run sees another's rows, dead tuples or statistics.
 */
export interface BenchDatabase {
  url: string;
  embedded: boolean;
  /** e.g. "17.5" */
  serverVersion: string;
  freshSchema(label: string, poolSize?: number): Promise<BenchSchema>;
  /** CHECKPOINT (best effort: needs superuser or pg_checkpoint on an external server). */
  checkpoint(): Promise<void>;
  close(): Promise<void>;
}

export interface BenchSchema {
  url: string;
  schema: string;
  pool: pg.Pool;
  /** Environment for a child process working on this schema. */
  env: Record<string, string>;
  /** Drop the schema and end the pool. */
  drop(): Promise<void>;
}

export async function openBenchDatabase(): Promise<BenchDatabase> {
  const external = process.env.LEASEHOLD_BENCH_DATABASE_URL;
  let url: string;
  let stop = async () => {};
  if (external) {
    url = external;
  } else {
    const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-bench-'));
    const server = await startEmbeddedPostgres({ dataDir: dir });
    url = server.url;
    stop = async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }
  const admin = createPool({ connectionString: url, max: 1, applicationName: 'leasehold-bench', queryTimeoutMs: 0 });
  const { rows } = await admin.query<{ server_version: string }>('SHOW server_version');
  const serverVersion = rows[0]?.server_version ?? 'unknown';

  return {
    url,
    embedded: !external,
    serverVersion,
    async freshSchema(label, poolSize = 10) {
      const schema = `bench_${label.replace(/[^a-z0-9_]/g, '_')}_${randomBytes(3).toString('hex')}`;
      const pool = createPool({ connectionString: url, max: poolSize, applicationName: 'leasehold-bench', queryTimeoutMs: 0 });
      await migrate(pool, schema);
      return {
        url,
        schema,
        pool,
        env: { DATABASE_URL: url, LEASEHOLD_SCHEMA: schema, LOG_LEVEL: 'silent' },
        async drop() {
          await pool.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`).catch(() => {});
          await pool.end();
        },
      };
    },
    async checkpoint() {
      await admin.query('CHECKPOINT').catch(() => {});
    },
    async close() {
      await admin.end().catch(() => {});
      await stop();
    },
  };
}
