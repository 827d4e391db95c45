import { SchemaNotMigratedError } from '../errors.js';

/**
 * The one mapping of "the tables are not there" to SchemaNotMigratedError,
 * applied at the library boundary (client/leasehold.ts, client/functions.ts,
 * holds/holds.ts), not in each table module: 42P01 undefined_table, 42883
 * undefined_function and 3F000 invalid_schema_name, when what is missing is
 * in `schema` (another schema's missing table is the caller's own bug and
 * stays as it was).
 */
const MISSING = new Set(['42P01', '42883', '3F000']);

export function schemaNotMigrated(error: unknown, schema: string): SchemaNotMigratedError | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code !== 'string' || !MISSING.has(code) || typeof message !== 'string') return undefined;
  const named = message.includes(`"${schema}.`) || message.includes(`"${schema}"`) || message.includes(` ${schema}.`);
  if (!named) return undefined;
  return new SchemaNotMigratedError(
    `schema ${schema} is not migrated (${message}); run leasehold migrate, or migrate(pool, { schema: ${JSON.stringify(schema)} })`,
  );
}

/** `work`, with a missing table or function of `schema` thrown as SchemaNotMigratedError. */
export async function inMigratedSchema<T>(schema: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw schemaNotMigrated(error, schema) ?? error;
  }
}
