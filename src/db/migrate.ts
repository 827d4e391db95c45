import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { packageRoot } from '../runtime/package-root.js';
import { MigrationError, SchemaNotMigratedError, ValidationError } from '../errors.js';
import { ident, unboundedQuery, withTransaction, type Queryable } from './pool.js';
import { isReservedSchemaName } from '../config-schema.js';

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

export async function loadMigrations(): Promise<Migration[]> {
  const dir = path.join(packageRoot(), 'migrations');
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => ({
      id: Number.parseInt(file.slice(0, 4), 10),
      name: file.replace(/\.sql$/, ''),
      sql: await readFile(path.join(dir, file), 'utf8'),
    })),
  );
}

export interface MigrateResult {
  applied: string[];
}

/**
 * Apply the numbered forward-only migrations not yet applied to `schema`.
 * One transaction per migration, each first taking a transaction-level
 * advisory lock keyed on the schema, so concurrent migrators (several
 * instances starting at once) take turns: each transaction reads what is
 * applied under the lock and applies the next one, or finds nothing left to
 * do. A transaction-level lock (not a session one) because it is released
 * by COMMIT or ROLLBACK on the connection that took it, also behind a
 * transaction-mode pooler (PgBouncer), where the statements of one session
 * may run on different server connections and a session lock would stay
 * behind on one of them. The schema is on the search_path inside each
 * transaction, so the SQL files name no schema.
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<MigrateResult> {
  if (isReservedSchemaName(schema)) {
    throw new ValidationError('schema', `${JSON.stringify(schema)} is a PostgreSQL system schema (pg_* or information_schema)`);
  }
  const migrations = await loadMigrations();
  const applied: string[] = [];
  // withTransaction: a connection lost mid-migration fails this call, not
  // the process; the server rolls back and drops the lock with it.
  for (;;) {
    const name = await withTransaction(pool, (client) => applyNext(client, schema, migrations));
    if (name === undefined) break;
    applied.push(name);
  }
  return { applied };
}

/** Under the lock: apply the first migration not yet applied; its name, or undefined when none is left. */
async function applyNext(client: pg.PoolClient, schema: string, migrations: Migration[]): Promise<string | undefined> {
  const s = ident(schema);
  // Waiting for another migrator, and a migration itself (an index on a
  // large table), may take longer than any query bound: no client timeout.
  await client.query(unboundedQuery(`SELECT pg_advisory_xact_lock(hashtextextended('leasehold.migrate:' || $1, 0))`, [schema]));
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
  await client.query(
    `CREATE TABLE IF NOT EXISTS ${s}.migrations (
       id integer PRIMARY KEY,
       name text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT now()
     )`,
  );
  const done = await client.query<{ id: number }>(`SELECT id FROM ${s}.migrations`);
  const doneIds = new Set(done.rows.map((r) => r.id));
  const latestKnown = migrations.at(-1)?.id ?? 0;
  const newer = [...doneIds].filter((id) => id > latestKnown);
  if (newer.length > 0) {
    throw new MigrationError(
      `schema ${schema} has migration ${Math.max(...newer)} applied, newer than this leasehold knows (${latestKnown}); upgrade leasehold`,
    );
  }
  const migration = migrations.find((m) => !doneIds.has(m.id));
  if (!migration) return undefined;
  try {
    await client.query(`SET LOCAL search_path TO ${s}`);
    // Insert the row first: a migrator that somehow got past the lock
    // fails on the primary key instead of applying twice.
    await client.query(`INSERT INTO ${s}.migrations (id, name) VALUES ($1, $2)`, [migration.id, migration.name]);
    await client.query(unboundedQuery(migration.sql));
  } catch (error) {
    throw new MigrationError(`migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
  }
  return migration.name;
}

/**
 * Refuse to work on a schema this leasehold has not fully migrated, without
 * creating anything: for commands that only read or operate on existing
 * rows. Migrations newer than this leasehold knows are allowed here (reading
 * a schema an upgraded fleet migrated); `migrate` itself refuses them.
 */
export async function requireMigrated(db: Queryable, schema: string): Promise<void> {
  const known = (await loadMigrations()).map((m) => m.id);
  const { rows } = await db.query<{ present: boolean }>(`SELECT to_regclass(format('%I.migrations', $1::text)) IS NOT NULL AS present`, [
    schema,
  ]);
  if (!rows[0]?.present) throw new SchemaNotMigratedError(`schema ${schema} has no leasehold tables; run leasehold migrate`);
  const done = await db.query<{ id: number }>(`SELECT id FROM ${ident(schema)}.migrations`);
  const doneIds = new Set(done.rows.map((r) => r.id));
  const missing = known.filter((id) => !doneIds.has(id));
  if (missing.length > 0) {
    throw new SchemaNotMigratedError(
      `schema ${schema} is not fully migrated (${known.length - missing.length} of ${known.length} migrations applied); run leasehold migrate`,
    );
  }
}
