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
 * These endpoints active, with their filters, in one statement (the
 * triggers write events for them from its commit on). Endpoints the
 * configuration does not name are left as they are: another process may
 * deliver them, and turning one off stops its events for good, which only
 * an operator decides (webhookEndpointsDeactivate). Returns the names of
 * the active endpoints this configuration does not name.
 */
export async function webhookEndpointsActivate(db: Queryable, schema: string, endpoints: readonly EndpointFilter[], now: Date | null = null): Promise<string[]> {
  const s = ident(schema);
  const { rows } = await db.query<{ name: string }>(
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
     SELECT name FROM ${s}.webhook_endpoints WHERE active AND name NOT IN (SELECT name FROM wanted) ORDER BY name`,
    [JSON.stringify(endpoints.map((e) => ({ name: e.name, ...(e.types ? { types: e.types } : {}), ...(e.tenants ? { tenants: e.tenants } : {}) }))), now],
  );
  return rows.map((r) => r.name);
}

/**
 * Turn one endpoint off: the triggers write no more events for it (those
 * it has pending stay, and go out if a process configured with it runs).
 * A process started with it configured turns it on again. Returns the row
 * as it was before, or null when there is no such endpoint.
 */
export async function webhookEndpointsDeactivate(db: Queryable, schema: string, name: string, now: Date | null = null): Promise<EndpointRow | null> {
  const s = ident(schema);
  const { rows } = await db.query<EndpointDbRow>(
    `WITH before AS (SELECT name, types, tenants, active, updated_at FROM ${s}.webhook_endpoints WHERE name = $1 FOR UPDATE),
     off AS (UPDATE ${s}.webhook_endpoints w SET active = false, updated_at = coalesce($2::timestamptz, now())
              FROM before WHERE w.name = before.name AND before.active)
     SELECT * FROM before`,
    [name, now],
  );
  return rows[0] ? endpointFromRow(rows[0]) : null;
}

export interface EndpointRow {
  name: string;
  types: string[] | null;
  tenants: string[] | null;
  active: boolean;
  updatedAt: Date;
}

interface EndpointDbRow {
  name: string;
  types: string[] | null;
  tenants: string[] | null;
  active: boolean;
  updated_at: Date;
}

const endpointFromRow = (r: EndpointDbRow): EndpointRow => ({ name: r.name, types: r.types, tenants: r.tenants, active: r.active, updatedAt: r.updated_at });

export async function webhookEndpointsList(db: Queryable, schema: string): Promise<EndpointRow[]> {
  const { rows } = await db.query<EndpointDbRow>(`SELECT name, types, tenants, active, updated_at FROM ${ident(schema)}.webhook_endpoints ORDER BY name`);
  return rows.map(endpointFromRow);
}
