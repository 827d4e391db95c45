import type { Queryable } from '../../src/db/pool.js';
import { webhookEndpointsActivate, webhookEndpointsDeactivate, type EndpointFilter } from '../../src/tables/webhook-endpoints.js';

/** Exactly these endpoints active, every other one off: the tests' own setting of the table. */
export async function endpointsExactly(pool: Queryable, schema: string, endpoints: readonly EndpointFilter[]): Promise<void> {
  for (const name of await webhookEndpointsActivate(pool, schema, endpoints)) await webhookEndpointsDeactivate(pool, schema, name);
}
