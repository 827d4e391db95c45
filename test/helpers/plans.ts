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

/**
 * Rows a call's statement read from `table`: the statement is captured as
 * planOf does, then run under EXPLAIN ANALYZE in a transaction that is
 * rolled back, and every scan of the table counts the rows it returned and
 * the rows its filters dropped, in every loop. A bound that starts and
 * stops an index scan keeps this near the rows wanted; a bound applied as a
 * filter after the scan reads everything the index holds.
 */
export async function rowsReadFrom(
  pool: pg.Pool,
  table: string,
  call: (db: Queryable) => Promise<unknown>,
  /** Run it as a prepared statement with this plan (plan_cache_mode), as a named statement runs; default: unnamed. */
  prepared?: 'generic' | 'custom',
): Promise<number> {
  let captured: { text: string; values: unknown[] } | undefined;
  const recorder: Queryable = {
    query: async (text: string, values?: unknown[]) => {
      captured ??= { text, values: values ?? [] };
      return { rows: [], rowCount: 0, command: '', oid: 0, fields: [] };
    },
  };
  await call(recorder).catch((error: unknown) => {
    if (!captured) throw error;
  });
  if (!captured) throw new Error('the call sent no statement to run');
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    let explain = { text: `EXPLAIN (ANALYZE, FORMAT JSON) ${captured.text}`, values: captured.values };
    if (prepared) {
      await client.query(`SET LOCAL plan_cache_mode = force_${prepared}_plan`);
      await client.query(`PREPARE rows_read_probe AS ${captured.text}`);
      const literals = captured.values.map((v) => (v === null || v === undefined ? 'NULL' : client.escapeLiteral(Array.isArray(v) ? `{${v.join(',')}}` : String(v))));
      explain = { text: `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE rows_read_probe(${literals.join(', ')})`, values: [] };
    }
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(explain.text, explain.values);
    let read = 0;
    const walk = (node: PlanNode): void => {
      if (node['Relation Name'] === table) {
        const perLoop = (node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0);
        read += perLoop * (node['Actual Loops'] ?? 1);
      }
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(rows[0]!["QUERY PLAN"][0].Plan);
    return read;
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    // A prepared statement outlives the transaction.
    if (prepared) await client.query('DEALLOCATE rows_read_probe').catch(() => {});
    client.release();
  }
}

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}
