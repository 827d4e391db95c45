import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';

/**
 * Every statement on `webhook_endpoints` (migration 0030): which endpoints
 * exist and what each wants, never its URL or secret. The triggers that
 * write webhook_events read it; with no active row they write nothing.
 */

export interface EndpointFilter {
  name: string;
  /** undefined: every type. */
  types?: readonly string[];
  /** undefined: every tenant. */
  tenants?: readonly string[];
}

/**
 * Make the table say what this configuration says, in one statement: these
 * endpoints active with their filters, every other one inactive (its
 * triggers stop writing for it; what it has pending stays, for a later
 * configuration that names it again, or for an operator to see).
 */
export async function webhookEndpointsSync(db: Queryable, schema: string, endpoints: readonly EndpointFilter[], now: Date | null = null): Promise<void> {
  const s = ident(schema);
  await db.query(
    `WITH wanted AS (
       SELECT e->>'name' AS name,
              CASE WHEN e ? 'types' THEN ARRAY(SELECT jsonb_array_elements_text(e->'types')) END AS types,
              CASE WHEN e ? 'tenants' THEN ARRAY(SELECT jsonb_array_elements_text(e->'tenants')) END AS tenants
         FROM jsonb_array_elements($1::jsonb) e
     ), upsert AS (
       INSERT INTO ${s}.webhook_endpoints AS w (name, types, tenants, active, updated_at)
       SELECT name, types, tenants, true, coalesce($2::timestamptz, now()) FROM wanted
       ON CONFLICT (name) DO UPDATE SET types = excluded.types, tenants = excluded.tenants, active = true, updated_at = excluded.updated_at
        WHERE w.types IS DISTINCT FROM excluded.types OR w.tenants IS DISTINCT FROM excluded.tenants OR NOT w.active
     )
     UPDATE ${s}.webhook_endpoints SET active = false, updated_at = coalesce($2::timestamptz, now())
      WHERE active AND name NOT IN (SELECT name FROM wanted)`,
    [JSON.stringify(endpoints.map((e) => ({ name: e.name, ...(e.types ? { types: e.types } : {}), ...(e.tenants ? { tenants: e.tenants } : {}) }))), now],
  );
}

export interface EndpointRow {
  name: string;
  types: string[] | null;
  tenants: string[] | null;
  active: boolean;
  updatedAt: Date;
}

export async function webhookEndpointsList(db: Queryable, schema: string): Promise<EndpointRow[]> {
  const { rows } = await db.query<{ name: string; types: string[] | null; tenants: string[] | null; active: boolean; updated_at: Date }>(
    `SELECT name, types, tenants, active, updated_at FROM ${ident(schema)}.webhook_endpoints ORDER BY name`,
  );
  return rows.map((r) => ({ name: r.name, types: r.types, tenants: r.tenants, active: r.active, updatedAt: r.updated_at }));
}
