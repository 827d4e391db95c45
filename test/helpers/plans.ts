import type pg from 'pg';
import type { Queryable } from '../../src/db/pool.js';

/**
 * EXPLAIN the statement a library function really sends: run it against a
 * recorder that captures its text and values, then plan exactly those on a
 * real database. Tests assert on the plan, so a statement edited in the code
 * is the statement tested, never a copy of it.
 */
export async function planOf(pool: pg.Pool, call: (db: Queryable) => Promise<unknown>): Promise<string> {
  let captured: { text: string; values: unknown[] } | undefined;
  const recorder: Queryable = {
    query: async (text: string, values?: unknown[]) => {
      captured = { text, values: values ?? [] };
      return { rows: [], rowCount: 0, command: '', oid: 0, fields: [] };
    },
  };
  // A function reading its (empty) result may throw after the statement was captured.
  await call(recorder).catch((error: unknown) => {
    if (!captured) throw error;
  });
  if (!captured) throw new Error('the call sent no statement to plan');
  const { rows } = await pool.query(`EXPLAIN ${captured.text}`, captured.values);
  return rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
}
