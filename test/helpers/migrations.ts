import type pg from 'pg';
import { loadMigrations } from '../../src/db/migrate.js';
import { ident, withTransaction } from '../../src/db/pool.js';

/**
 * Apply the migrations of `schema` numbered below `upTo`, as migrate does
 * (each in its transaction, on the schema's search_path, recorded in its
 * `migrations` table): a schema as an older release left it, for the
 * upgrade tests to run the rest on with `migrate`.
 */
export async function migrateBefore(pool: pg.Pool, schema: string, upTo: number): Promise<void> {
  const s = ident(schema);
  for (const migration of (await loadMigrations()).filter((m) => m.id < upTo)) {
    await withTransaction(pool, async (client) => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${s}.migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await client.query(`SET LOCAL search_path TO ${s}`);
      await client.query(`INSERT INTO ${s}.migrations (id, name) VALUES ($1, $2)`, [migration.id, migration.name]);
      await client.query(migration.sql);
    });
  }
}
