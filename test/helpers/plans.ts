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

/**
 * EXPLAIN every statement a call sends (a read model sends several): the
 * text of each and its plan, in the order sent.
 */
export async function plansOfAll(pool: pg.Pool, call: (db: Queryable) => Promise<unknown>): Promise<Array<{ text: string; plan: string }>> {
  const captured: Array<{ text: string; values: unknown[] }> = [];
  const recorder: Queryable = {
    query: async (text: string, values?: unknown[]) => {
      captured.push({ text, values: values ?? [] });
      return { rows: [], rowCount: 0, command: '', oid: 0, fields: [] };
    },
  };
  await call(recorder).catch(() => {});
  const plans = [];
  for (const { text, values } of captured) {
    const { rows } = await pool.query(`EXPLAIN ${text}`, values);
    plans.push({ text, plan: rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n') });
  }
  return plans;
}
