import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { inject } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, ident } from '../../src/db/pool.js';

export interface TestDatabase {
  url: string;
  schema: string;
  pool: pg.Pool;
  /** Environment for a child process working on this schema. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** A fresh, migrated schema of its own for one test file (or one test). */
export async function testDatabase(label = 't'): Promise<TestDatabase> {
  const url = inject('databaseUrl');
  const schema = `${label.replace(/[^a-z0-9_]/g, '_')}_${randomBytes(4).toString('hex')}`;
  // Seeding a million rows may take longer than the service's query bound on a loaded machine.
  const pool = createPool({ connectionString: url, max: 20, queryTimeoutMs: 0 });
  await migrate(pool, schema);
  return {
    url,
    schema,
    pool,
    env: { DATABASE_URL: url, LEASEHOLD_SCHEMA: schema, LOG_LEVEL: 'warn' },
    async close() {
      await pool.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`).catch(() => {});
      await pool.end();
    },
  };
}
